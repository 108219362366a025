//===- AssignStreams.cpp - collectives on a communication stream ---------===//

#include "codegen/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace weft {
#define GEN_PASS_DEF_ASSIGNSTREAMS
#include "codegen/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft::sched;

namespace {

// The stream collectives move to; the others stay on the program's first.
constexpr const char *kComm = "comm";

struct AssignStreamsPass : weft::impl::AssignStreamsBase<AssignStreamsPass> {
  void runOnOperation() override {
    ProgramOp program = getOperation();
    if (failed(requireUnplanned(program, "weft-sched-assign-streams")))
      return signalPassFailure();
    // Collectives and ring shifts (context parallelism's block exchanges).
    SmallVector<Operation *> collectives;
    for (Operation &op : program.getBody().front())
      if (isa<CollectiveOp, RingShiftOp>(op))
        collectives.push_back(&op);
    if (collectives.empty())
      return;
    OpBuilder b(program.getContext());
    SmallVector<Attribute> streams(program.getStreams().getValue());
    if (!llvm::is_contained(program.getStreams(), b.getStringAttr(kComm)))
      streams.push_back(b.getStringAttr(kComm));
    program.setStreamsAttr(b.getArrayAttr(streams));
    int64_t events = program.getEvents();
    StringRef compute = cast<StringAttr>(streams.front()).getValue();
    for (Operation *collective : collectives) {
      // What it touches, by storage.
      llvm::SmallPtrSet<Value, 4> touched;
      for (Value v : collective->getOperands())
        touched.insert(storageRoot(v));
      // Start once compute has written what it reads.
      b.setInsertionPoint(collective);
      int64_t ready = events++;
      RecordOp::create(b, collective->getLoc(), ready, compute);
      WaitOp::create(b, collective->getLoc(), ready, kComm);
      collective->setAttr("stream", b.getStringAttr(kComm));
      // Compute waits just before it next touches any of that storage.
      Operation *consumer = nullptr;
      for (Operation *op = collective->getNextNode(); op && !consumer;
           op = op->getNextNode()) {
        auto instr = dyn_cast<InstructionOpInterface>(op);
        if (!instr || instr.getStreamName() == kComm)
          continue;
        for (Value v : op->getOperands())
          if (touched.contains(storageRoot(v)))
            consumer = op;
      }
      int64_t done = events++;
      b.setInsertionPointAfter(collective);
      RecordOp::create(b, collective->getLoc(), done, kComm);
      if (consumer) {
        b.setInsertionPoint(consumer);
      } else {
        // Outputs and assigns read it when the program ends; a wait is an
        // instruction, so it goes before the first assign.
        Block &body = program.getBody().front();
        auto assigns = body.getOps<AssignOp>();
        b.setInsertionPoint(assigns.empty() ? body.getTerminator()
                                            : *assigns.begin());
      }
      WaitOp::create(b, collective->getLoc(), done, compute);
    }
    program.setEventsAttr(b.getI64IntegerAttr(events));
    serializeInstructionCollectives(program, compute);
  }

  /// Vocabulary-parallel cross-entropy combines its row statistics over
  /// its group on its own (compute) stream, as a partitioned expert route
  /// exchanges its counts and the expert dispatch its rows. Two collectives in
  /// flight on two streams at once can deadlock NCCL (each rank's kernels wait
  /// for peers that are blocked in the other), so such an instruction first
  /// waits for everything the comm stream has been given so far: its last
  /// record. Streams run in order, so that covers every earlier collective,
  /// and a later compute wait for a comm record already passed is dropped
  /// (waits for other streams' events are left alone).
  static void serializeInstructionCollectives(ProgramOp program,
                                              StringRef compute) {
    // Comm records by position on the comm stream (it runs in order, so
    // passing one passes every earlier one), and the furthest position the
    // compute stream has waited for.
    llvm::DenseMap<int64_t, int64_t> commPosition; // Event -> position.
    std::optional<int64_t> lastRecorded;           // Its event.
    int64_t waitedUpTo = -1;
    OpBuilder b(program.getContext());
    for (Operation &op :
         llvm::make_early_inc_range(program.getBody().front())) {
      if (auto record = dyn_cast<RecordOp>(op)) {
        if (record.getStreamName() == kComm) {
          commPosition[record.getEvent()] =
              static_cast<int64_t>(commPosition.size());
          lastRecorded = record.getEvent();
        }
        continue;
      }
      if (auto wait = dyn_cast<WaitOp>(op)) {
        auto position = commPosition.find(wait.getEvent());
        if (wait.getStreamName() != compute || position == commPosition.end())
          continue;
        // Passed already: the compute stream waited for a later comm record.
        if (position->second <= waitedUpTo) {
          wait.erase();
          continue;
        }
        waitedUpTo = position->second;
        continue;
      }
      ArrayAttr axes;
      if (auto ce = dyn_cast<CrossEntropyOp>(op))
        axes = ce.getVocabAxes();
      else if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
        axes = grad.getVocabAxes();
      else if (auto route = dyn_cast<ExpertRouteOp>(op))
        axes = route.getTokenAxes();
      else if (auto ragged = dyn_cast<RaggedAllToAllOp>(op))
        axes = ragged.getAxes();
      if (!axes || axes.empty() || !lastRecorded ||
          commPosition.lookup(*lastRecorded) <= waitedUpTo)
        continue;
      b.setInsertionPoint(&op);
      WaitOp::create(b, op.getLoc(), *lastRecorded, compute);
      waitedUpTo = commPosition.lookup(*lastRecorded);
    }
  }
};

} // namespace

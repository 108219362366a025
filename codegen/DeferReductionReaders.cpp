//===- DeferReductionReaders.cpp - reductions finish under compute -------===//
//
// With micro-batches, ZeRO-2 and 3 reduce-scatter each micro-batch's
// gradient as the backward makes it, and the kernel adding the shard into
// its accumulator follows right after: on the GPU's comm stream compute
// would wait for every reduction in turn. This pass moves each such
// reader (with the copy narrowing the shard before it: a chain ending in
// an instruction that only makes parameters' new values, the
// accumulators') to just before the next reduction's reader, so a
// reduction runs while the next layer's backward computes, as DDP's
// buckets overlap theirs.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace weft {
#define GEN_PASS_DEF_DEFERREDUCTIONREADERS
#include "codegen/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft::sched;

namespace {

struct DeferReductionReadersPass
    : weft::impl::DeferReductionReadersBase<DeferReductionReadersPass> {
  void runOnOperation() override {
    ProgramOp program = getOperation();
    if (failed(requireUnplanned(program, "weft-sched-defer-reduction-readers")))
      return signalPassFailure();
    Block &body = program.getBody().front();
    // Each reduction's readers: a chain of instructions ending in one that
    // only updates parameters in place (a narrowing copy of the reduced
    // gradient, then the accumulator's update), each link the only reader
    // of what the one before wrote.
    SmallVector<SmallVector<Operation *>> chains;
    for (Operation &op : body) {
      auto c = dyn_cast<CollectiveOp>(op);
      if (!c || (c.getKind() != CollectiveKind::reduce_scatter &&
                 c.getKind() != CollectiveKind::all_reduce))
        continue;
      SmallVector<Operation *> chain;
      for (Operation *link = nextReader(c, c.getOutput()); link;) {
        if (!isa<CopyOp, LaunchOp>(link) ||
            (!chains.empty() && llvm::is_contained(chains.back(), link)))
          break;
        chain.push_back(link);
        BufferAccess a = bufferAccess(link);
        if (a.writes.empty())
          break;
        if (llvm::all_of(a.writes,
                         [](Value v) {
                           return static_cast<bool>(v.getDefiningOp<GetOp>());
                         }) ||
            readAtEndOnly(link, a.writes)) {
          chains.push_back(chain);
          break;
        }
        link = onlyReader(link, a.writes);
      }
    }
    // Each chain moves to just before the next one, unless an instruction
    // in between touches what it writes or writes what it reads.
    for (size_t i = 0; i + 1 < chains.size(); ++i) {
      Operation *at = chains[i + 1].front();
      if (!chains[i].back()->isBeforeInBlock(at))
        continue;
      llvm::SmallPtrSet<Operation *, 4> mine(chains[i].begin(),
                                             chains[i].end());
      BufferAccess touched;
      for (Operation *link : chains[i]) {
        BufferAccess a = bufferAccess(link);
        touched.reads.insert(a.reads.begin(), a.reads.end());
        touched.writes.insert(a.writes.begin(), a.writes.end());
      }
      bool blocked = false;
      for (Operation *op = chains[i].front()->getNextNode();
           op != at && !blocked; op = op->getNextNode()) {
        if (mine.contains(op))
          continue;
        BufferAccess theirs = bufferAccess(op);
        for (Value v : touched.writes)
          blocked |= theirs.reads.contains(v) || theirs.writes.contains(v);
        for (Value v : touched.reads)
          blocked |= theirs.writes.contains(v);
      }
      if (blocked)
        continue;
      for (Operation *link : chains[i])
        link->moveBefore(at);
    }
  }

  /// Whether only the program's end (its assigns, its return) reads any of
  /// `written` after `op`: a parameter's new value, assigned once the
  /// program is done.
  static bool readAtEndOnly(Operation *op,
                            const llvm::SmallPtrSet<Value, 4> &written) {
    for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
      if (!isa<AssignOp, ReturnOp>(next) &&
          llvm::any_of(next->getOperands(), [&](Value v) {
            return written.contains(storageRoot(v));
          }))
        return false;
    return true;
  }

  /// The one instruction after `op` that reads any of `written`, if no
  /// other does.
  static Operation *onlyReader(Operation *op,
                               const llvm::SmallPtrSet<Value, 4> &written) {
    Operation *reader = nullptr;
    for (Operation *next = op->getNextNode(); next;
         next = next->getNextNode()) {
      if (!isa<InstructionOpInterface>(next) && !isa<ReturnOp, AssignOp>(next))
        continue;
      bool reads = llvm::any_of(next->getOperands(), [&](Value v) {
        return written.contains(storageRoot(v));
      });
      if (!reads)
        continue;
      if (reader || !isa<InstructionOpInterface>(next))
        return nullptr;
      reader = next;
    }
    return reader;
  }
};

} // namespace

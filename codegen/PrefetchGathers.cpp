//===- PrefetchGathers.cpp - parameter gathers issued ahead of use -------===//
//
// Partitioning gathers a ZeRO-3 (or tensor-parallel) parameter just before
// its first reader, so once weft-sched-assign-streams puts the gather on
// the comm stream, compute waits for each one in turn. This pass moves
// each parameter gather earlier, to just before the first reader of an
// earlier gather, so it moves while compute runs (FSDP's prefetch of the
// next layer's parameters), within a window that bounds the gathered bytes
// waiting for their reader. What makes the gathered buffer from parameters
// alone moves with it: the narrowing copy of a master weight's shard, or
// an FP8 weight's maxima, their max all-reduce and the cast of the shard
// to codes and scales (weft-fp8-gather's), so FP8 gathers are prefetched
// as the f32 ones were.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_PREFETCHGATHERS
#include "codegen/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft::sched;

namespace {

/// A parameter gather and what moves with it.
struct Gather {
  CollectiveOp op;
  /// The instructions making its input from parameters alone, in program
  /// order (a narrowing copy of the master weight's shard; an FP8 cast of
  /// it and the maxima it reads), if any.
  SmallVector<Operation *, 3> makers;
  /// The parameters (and constants) they read, by storage.
  llvm::SmallPtrSet<Value, 2> sources;
  /// The buffers the makers write, by storage.
  llvm::SmallPtrSet<Value, 4> made;
  /// The first instruction after it that reads what it gathered.
  Operation *reader = nullptr;
  int64_t bytes = 0;
};

/// Adds to `g` what makes `buffer` (a storage root) for `user` from
/// parameters alone: a parameter itself, or a buffer one earlier
/// instruction (a copy or kernel, an FP8 maximum or cast, a max
/// all-reduce) writes from such buffers, nothing else writing it before
/// `user`. At most `depth` instructions deep; false if it is anything else.
bool addMakers(Gather &g, Operation *user, Value buffer, int depth) {
  if (buffer.getDefiningOp<GetOp>()) {
    g.sources.insert(buffer);
    return true;
  }
  if (g.made.contains(buffer))
    return true;
  if (depth == 0 || !buffer.getDefiningOp<AllocOp>())
    return false;
  // Its one writer before the user.
  Operation *maker = nullptr;
  for (Operation *prev = user->getPrevNode(); prev && !maker;
       prev = prev->getPrevNode())
    if (isa<InstructionOpInterface>(prev) &&
        bufferAccess(prev).writes.contains(buffer))
      maker = prev;
  auto collective = dyn_cast_or_null<CollectiveOp>(maker);
  if (!maker ||
      !(isa<CopyOp, LaunchOp, Fp8AmaxOp, Fp8CastOp, Fp8EncodeOp>(maker) ||
        (collective && collective.getKind() == CollectiveKind::all_reduce &&
         collective.getReduction() == Reduction::max)))
    return false;
  for (Operation *between = maker->getNextNode(); between != user;
       between = between->getNextNode())
    if (bufferAccess(between).writes.contains(buffer))
      return false;
  BufferAccess access = bufferAccess(maker);
  g.made.insert(access.writes.begin(), access.writes.end());
  for (Value read : access.reads)
    if (!access.writes.contains(read) && !addMakers(g, maker, read, depth - 1))
      return false;
  g.makers.push_back(maker);
  return true;
}

/// `op` as a parameter gather: an all-gather of a parameter's buffer, or of
/// a buffer a few earlier instructions made from parameters alone.
std::optional<Gather> parameterGather(CollectiveOp op) {
  if (op.getKind() != CollectiveKind::all_gather)
    return std::nullopt;
  Gather g{op};
  // The copy; or the FP8 maxima, their all-reduce and the cast, of the
  // shard or of its narrowing copy (four deep whichever operand of the cast
  // is walked first).
  if (!addMakers(g, op, storageRoot(op.getInput()), /*depth=*/4))
    return std::nullopt;
  llvm::sort(g.makers,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  g.reader = nextReader(op, op.getOutput());
  if (!g.reader)
    return std::nullopt;
  g.bytes = cast<BufferType>(op.getOutput().getType()).getBytes();
  return g;
}

struct PrefetchGathersPass
    : weft::impl::PrefetchGathersBase<PrefetchGathersPass> {
  void runOnOperation() override {
    ProgramOp program = getOperation();
    if (failed(requireUnplanned(program, "weft-sched-prefetch-gathers")))
      return signalPassFailure();
    Block &body = program.getBody().front();
    std::vector<Gather> gathers;
    for (Operation &op : body)
      if (auto collective = dyn_cast<CollectiveOp>(op))
        if (std::optional<Gather> g = parameterGather(collective))
          gathers.push_back(std::move(*g));
    // The window: the largest gather's bytes (often the embedding's), so
    // about a layer's weights wait gathered ahead of their readers (FSDP
    // keeps one unit ahead).
    int64_t window = 0;
    for (const Gather &g : gathers)
      window = std::max(window, g.bytes);
    for (size_t k = 1; k < gathers.size(); ++k) {
      // The earliest gather j whose reader can start gather k: the gathers
      // after j up to k fit the window.
      size_t j = k - 1;
      for (int64_t ahead = gathers[k].bytes;
           j > 0 && ahead + gathers[j].bytes <= window; --j)
        ahead += gathers[j].bytes;
      Operation *at = gathers[j].reader;
      // Gathers keep their order (every rank issues them alike): not before
      // the previous one, and at an instruction, after the buffers defined
      // since it (one may be this gather's operand).
      Operation *previous = gathers[k - 1].op;
      if (at->isBeforeInBlock(previous)) {
        at = previous->getNextNode();
        while (at && !isa<InstructionOpInterface>(at))
          at = at->getNextNode();
        if (!at)
          continue;
      }
      Gather &g = gathers[k];
      if (!at->isBeforeInBlock(g.op))
        continue;
      // Its makers move too but for those earlier already (the backward's
      // gather of a shard the forward narrowed or cast).
      llvm::erase_if(g.makers,
                     [&](Operation *m) { return m->isBeforeInBlock(at); });
      // Not above an instruction that writes what it reads (the optimizer
      // updating a parameter in place before gathering it again, another
      // instruction overwriting the narrowed shard), up to the gather: one
      // between two makers stays behind them too.
      llvm::SmallPtrSet<Operation *, 4> moving(g.makers.begin(),
                                               g.makers.end());
      bool blocked = false;
      for (Operation *op = at; op != g.op && !blocked; op = op->getNextNode())
        if (!moving.contains(op))
          for (Value written : bufferAccess(op).writes)
            blocked |= g.sources.contains(written) || g.made.contains(written);
      if (blocked)
        continue;
      move(g, at);
    }
  }

  /// Moves `g`'s instructions, and the buffers they name that are defined
  /// after `at`, to just before `at`, in their order.
  static void move(const Gather &g, Operation *at) {
    llvm::SetVector<Operation *> moved;
    std::function<void(Operation *)> add = [&](Operation *op) {
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (!isa<InstructionOpInterface>(def) && at->isBeforeInBlock(def))
            add(def);
      moved.insert(op);
    };
    for (Operation *maker : g.makers)
      add(maker);
    add(g.op);
    for (Operation *op : moved)
      op->moveBefore(at);
  }
};

} // namespace

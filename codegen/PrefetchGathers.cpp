//===- PrefetchGathers.cpp - parameter gathers issued ahead of use -------===//
//
// Partitioning gathers a ZeRO-3 (or tensor-parallel) parameter just before
// its first reader, so once weft-sched-assign-streams puts the gather on
// the comm stream, compute waits for each one in turn. This pass moves
// each parameter gather earlier, to just before the first reader of an
// earlier gather, so it moves while compute runs (FSDP's prefetch of the
// next layer's parameters), within a window that bounds the gathered bytes
// waiting for their reader.
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
  /// The instruction making its input from parameters (a narrowing copy of
  /// the master weight's shard), if any.
  Operation *maker = nullptr;
  /// The parameters (and constants) it reads, by storage.
  llvm::SmallPtrSet<Value, 2> sources;
  /// The first instruction after it that reads what it gathered.
  Operation *reader = nullptr;
  int64_t bytes = 0;
};

/// `op` as a parameter gather: an all-gather of a parameter's buffer, or of
/// a buffer one earlier instruction made from parameters alone.
std::optional<Gather> parameterGather(CollectiveOp op) {
  if (op.getKind() != CollectiveKind::all_gather)
    return std::nullopt;
  Gather g{op};
  Value input = storageRoot(op.getInput());
  if (input.getDefiningOp<GetOp>()) {
    g.sources.insert(input);
  } else {
    if (!input.getDefiningOp<AllocOp>())
      return std::nullopt;
    // Its one writer before the gather.
    for (Operation *prev = op->getPrevNode(); prev && !g.maker;
         prev = prev->getPrevNode())
      if (isa<InstructionOpInterface>(prev) &&
          bufferAccess(prev).writes.contains(input))
        g.maker = prev;
    if (!g.maker || !isa<CopyOp, LaunchOp>(g.maker))
      return std::nullopt;
    for (Value v : g.maker->getOperands()) {
      Value root = storageRoot(v);
      if (root == input)
        continue;
      if (!root.getDefiningOp<GetOp>() ||
          bufferAccess(g.maker).writes.contains(root))
        return std::nullopt;
      g.sources.insert(root);
    }
    // Nothing else writes the made buffer between them.
    for (Operation *between = g.maker->getNextNode(); between != op;
         between = between->getNextNode())
      if (bufferAccess(between).writes.contains(input))
        return std::nullopt;
  }
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
      // Its maker moves too unless it is earlier already (the backward's
      // gather of a shard the forward narrowed).
      if (g.maker && !at->isBeforeInBlock(g.maker))
        g.maker = nullptr;
      Operation *first = g.maker ? g.maker : g.op.getOperation();
      // Not above an instruction that writes what it reads (the optimizer
      // updating a parameter in place before gathering it again, another
      // instruction overwriting the narrowed shard).
      Value input = storageRoot(g.op.getInput());
      bool blocked = false;
      for (Operation *op = at; op != first && !blocked; op = op->getNextNode())
        for (Value written : bufferAccess(op).writes)
          blocked |= g.sources.contains(written) || written == input;
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
    if (g.maker)
      add(g.maker);
    add(g.op);
    for (Operation *op : moved)
      op->moveBefore(at);
  }
};

} // namespace

//===- SchedMemoryPlan.cpp - live ranges and offsets of sched buffers ----===//

#include "passes/memory/Passes.h"
#include "passes/memory/Placement.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_SCHEDPLANMEMORY
#include "passes/memory/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft::sched;

int64_t weft::elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

namespace {

/// The alloc whose bytes `v` is (through views), or null.
AllocOp rootAlloc(Value v) { return storageRoot(v).getDefiningOp<AllocOp>(); }

struct SchedPlanMemoryPass
    : weft::impl::SchedPlanMemoryBase<SchedPlanMemoryPass> {
  void runOnOperation() override {
    ProgramOp program = getOperation();
    if (program.isPlanned())
      return;
    Block &body = program.getBody().front();
    int64_t end = 0;
    for (Operation &op : body)
      if (isa<InstructionOpInterface>(op))
        ++end;

    // Each alloc's first and last use, by instruction index.
    llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> range;
    SmallVector<AllocOp> allocs;
    auto use = [&](Value v, int64_t at) {
      if (AllocOp alloc = rootAlloc(v)) {
        auto [it, inserted] = range.try_emplace(alloc, at, at);
        it->second.first = std::min(it->second.first, at);
        it->second.second = std::max(it->second.second, at);
      }
    };
    // An instruction on another stream than the first may still run until
    // the first stream waits for an event recorded after it: its buffers
    // live until then (or to the end).
    SmallVector<Operation *> instructions;
    for (Operation &op : body)
      if (isa<InstructionOpInterface>(op))
        instructions.push_back(&op);
    StringRef first = cast<StringAttr>(program.getStreams()[0]).getValue();
    auto syncedAt = [&](int64_t i) -> int64_t {
      StringRef stream =
          cast<InstructionOpInterface>(instructions[i]).getStreamName();
      if (stream == first)
        return i;
      for (int64_t r = i + 1; r < end; ++r) {
        auto record = dyn_cast<RecordOp>(instructions[r]);
        if (!record || record.getStream() != stream)
          continue;
        for (int64_t w = r + 1; w < end; ++w)
          if (auto wait = dyn_cast<WaitOp>(instructions[w]);
              wait && wait.getEvent() == record.getEvent() &&
              wait.getStream() == first)
            return w;
      }
      return end;
    };
    int64_t index = 0;
    for (Operation &op : body) {
      if (auto alloc = dyn_cast<AllocOp>(op))
        allocs.push_back(alloc);
      if (isa<InstructionOpInterface>(op)) {
        int64_t until = syncedAt(index);
        for (Value v : op.getOperands()) {
          use(v, index);
          use(v, until);
        }
        ++index;
      } else if (isa<AssignOp, ReturnOp>(op)) {
        // Read after the last instruction.
        for (Value v : op.getOperands())
          use(v, end);
      }
    }

    SmallVector<weft::Lifetime> lifetimes;
    SmallVector<AllocOp> used;
    for (AllocOp alloc : allocs) {
      auto it = range.find(alloc);
      if (it == range.end())
        continue;
      used.push_back(alloc);
      lifetimes.push_back(
          {alloc.getType().getBytes(), it->second.first, it->second.second});
    }
    // What no instruction touches has no bytes: drop it and its views.
    for (AllocOp alloc : allocs)
      if (!range.count(alloc)) {
        SmallVector<Operation *> dead = {alloc};
        for (size_t i = 0; i < dead.size(); ++i)
          for (Operation *user : dead[i]->getUsers())
            dead.push_back(user);
        for (Operation *op : llvm::reverse(dead))
          op->erase();
      }

    weft::Placement plan = weft::placeBuffers(lifetimes, program.getAlign());
    if (plan.tooLarge) {
      used[*plan.tooLarge].emitError(plan.tooLargeMessage(lifetimes));
      return signalPassFailure();
    }
    Builder b(program.getContext());
    for (auto [alloc, lifetime, offset] :
         llvm::zip(used, lifetimes, plan.offsets)) {
      alloc.setOffsetAttr(b.getI64IntegerAttr(offset));
      alloc.setFirstAttr(b.getI64IntegerAttr(lifetime.first));
      alloc.setLastAttr(b.getI64IntegerAttr(lifetime.last));
    }
    program.setArenaAttr(b.getI64IntegerAttr(plan.peak));
  }
};

} // namespace

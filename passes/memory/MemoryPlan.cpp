//===- MemoryPlan.cpp - static buffer offsets from liveness ---------------===//

#include "passes/memory/Passes.h"
#include "passes/memory/Placement.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <algorithm>

namespace weft {
#define GEN_PASS_DEF_MEMORYPLAN
#include "passes/memory/Passes.h.inc"
} // namespace weft

using namespace mlir;

int64_t weft::elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

namespace {
constexpr int64_t kAlignment = 64;

bool planned(Operation *op) {
  return !isa<weft::ParamOp, weft::ConstantOp, func::ReturnOp>(op) &&
         op->getNumResults() > 0;
}

/// Whether `v` is stored outside the arena: a parameter or a constant, or a
/// view of one (a replicated parameter's copy_to_group under data
/// parallelism), as the sched lowering aliases it.
bool outsideArena(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  return isa<weft::ParamOp, weft::ConstantOp>(def) ||
         (weft::isViewOp(def) && outsideArena(def->getOperand(0)));
}

/// A buffer: one or more values that share storage (a value and its views).
struct Buffer {
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // Op positions, inclusive.
  int64_t offset = -1;
};
} // namespace

FailureOr<int64_t> weft::planMemory(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;

  // Views share their operand's buffer; a result computed into its
  // parameter in place (inPlaceParam), or a view of a parameter, has none.
  bool readsChecked = readsCheckedData(func);
  llvm::EquivalenceClasses<Value> classes;
  SmallVector<Value> values;
  for (Operation &op : body) {
    if (!planned(&op))
      continue;
    for (OpResult r : op.getResults()) {
      if (inPlaceParam(r, readsChecked) || outsideArena(r))
        continue;
      classes.insert(r);
      values.push_back(r);
    }
    if (isViewOp(&op) && op.getOperand(0).getDefiningOp() &&
        planned(op.getOperand(0).getDefiningOp()) &&
        !outsideArena(op.getResult(0)))
      classes.unionSets(op.getResult(0), op.getOperand(0));
  }

  llvm::DenseMap<Value, Buffer> buffers; // Keyed by class leader.
  SmallVector<Value> leaders;            // In program order.
  for (Value v : values) {
    Value leader = classes.getLeaderValue(v);
    auto type = cast<RankedTensorType>(v.getType());
    int64_t bytes = type.getNumElements() * elementBytes(type.getElementType());
    int64_t def = position[v.getDefiningOp()], end = def;
    for (Operation *user : v.getUsers())
      // weft.assign takes effect when the step ends, so its value must
      // survive until then, whatever runs after the assign.
      end = std::max(end, isa<AssignOp>(user)
                              ? index
                              : position[body.findAncestorOpInBlock(*user)]);
    auto [it, inserted] = buffers.try_emplace(leader, Buffer{bytes, def, end});
    if (inserted) {
      leaders.push_back(leader);
    } else {
      it->second.bytes = std::max(it->second.bytes, bytes);
      it->second.first = std::min(it->second.first, def);
      it->second.last = std::max(it->second.last, end);
    }
  }

  SmallVector<Lifetime> lifetimes;
  for (Value leader : leaders) {
    const Buffer &b = buffers[leader];
    lifetimes.push_back({b.bytes, b.first, b.last});
  }
  Placement plan = placeBuffers(lifetimes, kAlignment);
  if (plan.tooLarge)
    return leaders[*plan.tooLarge].getDefiningOp()->emitError(
               plan.tooLargeMessage(lifetimes)),
           failure();
  for (auto [leader, offset] : llvm::zip(leaders, plan.offsets))
    buffers[leader].offset = offset;
  int64_t peak = plan.peak;

  Builder builder(func.getContext());
  for (Operation &op : body) {
    if (!planned(&op))
      continue;
    // -1: the result is its parameter's storage (or a view of it).
    SmallVector<int64_t> offsets;
    for (Value r : op.getResults())
      offsets.push_back(
          classes.contains(r) ? buffers[classes.getLeaderValue(r)].offset : -1);
    op.setAttr("weft.offsets", builder.getDenseI64ArrayAttr(offsets));
  }
  func->setAttr("weft.arena_bytes", builder.getI64IntegerAttr(peak));
  return peak;
}

namespace {
struct MemoryPlanPass : weft::impl::MemoryPlanBase<MemoryPlanPass> {
  void runOnOperation() override {
    if (getOperation().isExternal())
      return;
    if (getOperation().getBody().getBlocks().size() != 1) {
      getOperation().emitError(
          "weft-memory-plan needs a single-block function");
      return signalPassFailure();
    }
    if (failed(weft::planMemory(getOperation())))
      signalPassFailure();
  }
};
} // namespace

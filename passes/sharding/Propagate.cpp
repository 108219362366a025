//===- Propagate.cpp - spread shardings through op rules ------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/ShardingState.h"

#include "mlir/IR/SymbolTable.h"

namespace weft {
#define GEN_PASS_DEF_SHARDINGPROPAGATE
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

namespace {
class Propagator {
public:
  explicit Propagator(MeshOp mesh) : mesh(mesh) {}

  /// One visit of `op`; returns true if any value's sharding grew.
  bool visit(Operation *op) {
    auto ruled = dyn_cast<ShardingRuleOpInterface>(op);
    if (!ruled)
      return false;
    ShardingRule rule = ruled.getShardingRule();
    SmallVector<Axes> factors = factorAxes(op, rule);
    bool changed = false;
    auto spread = [&](Value v, ArrayRef<int64_t> map) {
      State &s = state(v);
      if (s.fixed)
        return;
      int64_t size = 0;
      for (auto [d, f] : llvm::enumerate(map)) {
        if (f == ShardingRule::kWhole || factors[f].empty() ||
            !s.dims[d].empty())
          continue;
        size = cast<RankedTensorType>(v.getType()).getDimSize(d);
        if (!rule.splits(f, size, splitCount(mesh, factors[f])) ||
            llvm::any_of(factors[f], [&](StringAttr a) { return uses(s, a); }))
          continue;
        s.dims[d] = factors[f];
        changed = true;
      }
    };
    for (auto [v, map] : llvm::zip(op->getOperands(), rule.operands))
      spread(v, map);
    for (auto [v, map] : llvm::zip(op->getResults(), rule.results))
      spread(v, map);
    return changed;
  }

  /// Warns where a fixed value disagrees with its op's factors.
  void checkConflicts(Operation *op) {
    auto ruled = dyn_cast<ShardingRuleOpInterface>(op);
    if (!ruled)
      return;
    ShardingRule rule = ruled.getShardingRule();
    SmallVector<Axes> factors = factorAxes(op, rule);
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(op->getOperands(), rule.operands))) {
      auto [v, map] = pair;
      const State &s = state(v);
      for (auto [d, f] : llvm::enumerate(map)) {
        Axes want = f == ShardingRule::kWhole ? Axes() : factors[f];
        if (s.fixed && !s.dims[d].empty() && s.dims[d] != want)
          op->emitWarning("operand ")
              << i << " dimension " << d << " is annotated split over "
              << describe(s.dims[d]) << " but the op splits it over "
              << describe(want) << "; the partitioner will reshard it";
      }
    }
  }

  /// Writes the propagated shardings back as attributes.
  void write(func::FuncOp func) {
    auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    for (auto &[value, s] : states)
      if (!s.fixed && !isReplicated(s.dims))
        setSharding(value, toAttr(func.getContext(), meshRef, s.dims));
  }

private:
  struct State {
    DimAxes dims;
    bool fixed = false; // Annotated: propagation never changes it.
  };

  State &state(Value v) {
    auto it = states.find(v);
    if (it != states.end())
      return it->second;
    State s;
    s.dims = readDims(v);
    s.fixed = static_cast<bool>(getSharding(v));
    // A constant with distinct elements cannot be split locally.
    if (auto constant = v.getDefiningOp<ConstantOp>())
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
        s.fixed |= !dense.isSplat();
    return states.try_emplace(v, std::move(s)).first->second;
  }

  static bool uses(const State &s, StringAttr axis) {
    return llvm::any_of(
        s.dims, [&](const Axes &a) { return llvm::is_contained(a, axis); });
  }

  static std::string describe(ArrayRef<StringAttr> axes) {
    std::string out = "[";
    for (auto [i, a] : llvm::enumerate(axes))
      out += (i ? ", " : "") + a.getValue().str();
    return out + "]";
  }

  SmallVector<Axes> factorAxes(Operation *op, const ShardingRule &rule) {
    return chooseFactorAxes(op, rule,
                            [&](Value v, bool) { return state(v).dims; });
  }

  MeshOp mesh;
  llvm::MapVector<Value, State> states;
};
} // namespace

void weft::propagateShardings(func::FuncOp func) {
  MeshOp mesh = findMesh(func);
  if (!mesh)
    return;
  Propagator propagator(mesh);
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation *op : ops)
      changed |= propagator.visit(op);
    for (Operation *op : llvm::reverse(ops))
      changed |= propagator.visit(op);
  }
  for (Operation *op : ops)
    propagator.checkConflicts(op);
  propagator.write(func);
}

namespace {
struct ShardingPropagatePass
    : weft::impl::ShardingPropagateBase<ShardingPropagatePass> {
  void runOnOperation() override { propagateShardings(getOperation()); }
};
} // namespace

//===- ShardingState.h - per-dimension axes of a value ----------*- C++ -*-===//
//
// What propagation and partitioning hold for each value while they work: the
// mesh axes splitting each dimension (major to minor), converted to and from
// `#weft.sharding`.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_SHARDING_SHARDINGSTATE_H
#define WEFT_PASSES_SHARDING_SHARDINGSTATE_H

#include "dialects/weft/IR/WeftOps.h"

namespace weft::sharding {

using Axes = llvm::SmallVector<mlir::StringAttr, 2>;
using DimAxes = llvm::SmallVector<Axes>;

/// The axes per dimension of `value`: its `weft.sharding`, or all empty.
inline DimAxes readDims(mlir::Value value, ShardingAttr attr = {}) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  DimAxes dims(type.getRank());
  if (!attr)
    attr = getSharding(value);
  if (attr)
    for (auto [d, entry] : llvm::enumerate(attr.getDims()))
      for (mlir::Attribute axis : mlir::cast<mlir::ArrayAttr>(entry))
        dims[d].push_back(mlir::cast<mlir::StringAttr>(axis));
  return dims;
}

inline ShardingAttr toAttr(mlir::MLIRContext *context,
                           mlir::FlatSymbolRefAttr mesh, const DimAxes &dims) {
  llvm::SmallVector<mlir::Attribute> entries;
  for (const Axes &axes : dims)
    entries.push_back(mlir::ArrayAttr::get(
        context, llvm::SmallVector<mlir::Attribute>(axes.begin(), axes.end())));
  return ShardingAttr::get(context, mesh,
                           mlir::ArrayAttr::get(context, entries));
}

inline bool isReplicated(const DimAxes &dims) {
  return llvm::all_of(dims, [](const Axes &a) { return a.empty(); });
}

/// The product of the sizes of `axes` on `mesh`.
inline int64_t splitCount(MeshOp mesh, llvm::ArrayRef<mlir::StringAttr> axes) {
  int64_t n = 1;
  for (mlir::StringAttr axis : axes)
    n *= mesh.axisSize(axis.getValue());
  return n;
}

/// Chooses the axes of each factor of `op` from the split dimensions of its
/// values, in priority order: parameters first (weights outrank
/// activations, as Megatron places them and as Shardy's priorities let a
/// user say), then results, then the other operands. An axis already taken
/// by a factor is not given to another. `dimsOf(value, isResult)` is the
/// split a value has now.
template <typename DimsOf>
llvm::SmallVector<Axes>
chooseFactorAxes(mlir::Operation *op, const ShardingRule &rule, DimsOf dimsOf) {
  llvm::SmallVector<Axes> factors(rule.factorSizes.size());
  llvm::SmallDenseSet<mlir::StringAttr> taken;
  auto take = [&](const DimAxes &dims, llvm::ArrayRef<int64_t> map) {
    for (auto [d, f] : llvm::enumerate(map))
      if (f != ShardingRule::kWhole && factors[f].empty() && !dims[d].empty() &&
          llvm::none_of(dims[d],
                        [&](mlir::StringAttr a) { return taken.count(a); })) {
        factors[f] = dims[d];
        taken.insert(dims[d].begin(), dims[d].end());
      }
  };
  // A parameter seen through what partitioning puts before its uses, and
  // through views of it (its cast to the compute type, a slice and reshape
  // of it, as GPT-2's c_attn held [d, 3, d] is read per q, k and v; its FP8
  // quantization): its split decides the op's, as a weight read directly
  // does.
  auto isParam = [](mlir::Value v) {
    while (mlir::Operation *def = v.getDefiningOp()) {
      if (mlir::isa<ParamOp>(def))
        return true;
      if (!mlir::isa<CopyToGroupOp, AllGatherOp, CastOp, SliceOp, ReshapeOp,
                     Fp8QuantizeOp>(def))
        return false;
      v = def->getOperand(0);
    }
    return false;
  };
  for (auto [v, map] : llvm::zip(op->getOperands(), rule.operands))
    if (isParam(v))
      take(dimsOf(v, false), map);
  for (auto [v, map] : llvm::zip(op->getResults(), rule.results))
    take(dimsOf(v, true), map);
  for (auto [v, map] : llvm::zip(op->getOperands(), rule.operands))
    if (!isParam(v))
      take(dimsOf(v, false), map);
  return factors;
}

/// The mesh every `weft.sharding` in `func` names (the first found), or null.
inline MeshOp findMesh(mlir::func::FuncOp func) {
  ShardingAttr found;
  for (mlir::BlockArgument arg : func.getArguments())
    if ((found = getSharding(arg)))
      break;
  if (!found)
    func.walk([&](mlir::Operation *op) {
      for (mlir::Value r : op->getResults())
        if ((found = getSharding(r)))
          return mlir::WalkResult::interrupt();
      return mlir::WalkResult::advance();
    });
  if (!found)
    return {};
  return mlir::SymbolTable::lookupNearestSymbolFrom<MeshOp>(func,
                                                            found.getMesh());
}

} // namespace weft::sharding

#endif // WEFT_PASSES_SHARDING_SHARDINGSTATE_H

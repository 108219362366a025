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

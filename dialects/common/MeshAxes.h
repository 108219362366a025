//===- MeshAxes.h - what weft.mesh and sched.mesh share ---------*- C++ -*-===//
//
// Both dialects declare a device mesh as named axes with sizes (the graph's
// for placement, the schedule's for collectives and peers): one lookup and
// one structural check for both.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_COMMON_MESHAXES_H
#define WEFT_DIALECTS_COMMON_MESHAXES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringSet.h"

namespace weft {

/// The size of axis `name` of a mesh of `axes` and `sizes`, or 0 if the
/// mesh has no such axis.
inline int64_t meshAxisSize(mlir::ArrayAttr axes, llvm::ArrayRef<int64_t> sizes,
                            llvm::StringRef name) {
  for (auto [axis, size] :
       llvm::zip(axes.getAsValueRange<mlir::StringAttr>(), sizes))
    if (axis == name)
      return size;
  return 0;
}

/// The most ranks a mesh may have (a plan's limit too).
inline constexpr int64_t kMaxMeshRanks = int64_t(1) << 30;

/// Axes and sizes pair up, no axis appears twice, every size is positive
/// and their product is at most kMaxMeshRanks.
inline mlir::LogicalResult verifyMeshAxes(mlir::Operation *op,
                                          mlir::ArrayAttr axes,
                                          llvm::ArrayRef<int64_t> sizes) {
  if (axes.size() != sizes.size())
    return op->emitOpError("has ")
           << axes.size() << " axes but " << sizes.size() << " sizes";
  llvm::StringSet<> seen;
  int64_t ranks = 1;
  for (auto [axis, size] :
       llvm::zip(axes.getAsValueRange<mlir::StringAttr>(), sizes)) {
    if (!seen.insert(axis).second)
      return op->emitOpError("axis '") << axis << "' appears twice";
    if (size <= 0)
      return op->emitOpError("axis '")
             << axis << "' has size " << size << "; sizes must be positive";
    // Every count of ranks computed from the mesh is an int64.
    if (__builtin_mul_overflow(ranks, size, &ranks) || ranks > kMaxMeshRanks)
      return op->emitOpError("has too many ranks: the product of its sizes is "
                             "above 2^30");
  }
  return mlir::success();
}

} // namespace weft

#endif // WEFT_DIALECTS_COMMON_MESHAXES_H

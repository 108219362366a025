//===- AttentionDropout.h - what weft and sched attention share -*- C++ -*-===//
//
// weft.attention(_grad) and sched.attention(_grad) carry dropout of the
// probabilities as the same optional pieces (a rate, its seed, the step and
// micro-batch counters, the block's split and micro-batch count): one check
// of them for both dialects, each checking the block its own way.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H
#define WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace weft {

/// Checks `op`'s dropout: a seed, counter or block only with a rate, a rate
/// in [0, 1) with a seed, the block as `verifyBlock` (the dialect's mask
/// check) says, and its split over the query's batch, heads and (held by
/// positions: context parallelism's ring) sequence, never the head
/// dimension.
template <typename Op>
mlir::LogicalResult
verifyAttentionDropout(Op op,
                       llvm::function_ref<mlir::LogicalResult()> verifyBlock) {
  if (!op.getDropout()) {
    if (op.getSeed() || op.getStep() || op.getMicrobatch() || op.getSplit() ||
        op.getMicrobatches())
      return op.emitOpError("has a seed, step, micro-batch or split but no "
                            "dropout");
    return mlir::success();
  }
  double rate = op.getDropout()->convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return op.emitOpError("dropout rate must be in [0, 1), got ") << rate;
  if (!op.getSeed())
    return op.emitOpError("dropout needs a seed");
  if (mlir::failed(verifyBlock()))
    return mlir::failure();
  if (std::optional<mlir::ArrayAttr> split = op.getSplit())
    for (int64_t d : {1, 3})
      if (!mlir::cast<mlir::ArrayAttr>((*split)[d]).empty() &&
          (d == 3 || !op.getQueryPositions()))
        return op.emitOpError("dropout's mask splits batch, heads and (with "
                              "positions) the sequence, not dimension ")
               << d << " of the query";
  return mlir::success();
}

} // namespace weft

#endif // WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H

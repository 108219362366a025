//===- AttentionDropout.h - what weft and sched attention share -*- C++ -*-===//
//
// weft.attention(_grad) and sched.attention(_grad) carry dropout of the
// probabilities as the same optional pieces (a rate, its seed, the step and
// micro-batch counters, the block's split and micro-batch count): one check
// that they come together, for both dialects.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H
#define WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace weft {

/// Whether `op` drops its probabilities: failure (diagnosed) when a seed,
/// counter or block comes without a rate, a rate without a seed, or a rate
/// outside [0, 1). The dialect checks the block itself.
template <typename Op> mlir::FailureOr<bool> attentionDropout(Op op) {
  if (!op.getDropout()) {
    if (op.getSeed() || op.getStep() || op.getMicrobatch() || op.getSplit() ||
        op.getMicrobatches())
      return op.emitOpError("has a seed, step, micro-batch or split but no "
                            "dropout");
    return false;
  }
  double rate = op.getDropout()->convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return op.emitOpError("dropout rate must be in [0, 1), got ") << rate;
  if (!op.getSeed())
    return op.emitOpError("dropout needs a seed");
  return true;
}

} // namespace weft

#endif // WEFT_DIALECTS_COMMON_ATTENTIONDROPOUT_H

//===- Passes.h - reverse-mode automatic differentiation --------*- C++ -*-===//

#ifndef WEFT_PASSES_AUTODIFF_PASSES_H
#define WEFT_PASSES_AUTODIFF_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/autodiff/Passes.h.inc"

/// Refuses what a function to differentiate may not hold, with an error at
/// the op: a call (Weft compiles a single function, so no recursion either)
/// or a weft.assign (only the optimizer step Weft builds assigns
/// parameters). differentiate checks it first; weftc before anything else
/// it asks of @forward.
mlir::LogicalResult checkForwardOps(mlir::func::FuncOp forward);

/// Dynamic loss scaling (fp16): the backward starts from the loss scale
/// instead of 1, so every gradient it makes is scaled (small ones stay
/// above f16's subnormals); the optimizer step unscales them, skips a step
/// whose gradients overflowed and adjusts the scale (weft-optimizer-adamw).
/// The scale is `initial` times the state parameter kLossScaleParam (ones
/// at start), which carries kLossScaleAttr (`initial`) and
/// kLossScaleWindowAttr (`window`, the clean steps before it doubles).
struct LossScaling {
  double initial = 0; // 0: no loss scaling.
  int64_t window = 2000;
};

/// Builds the gradient function of `forward` (see weft-autodiff) next to it
/// and returns it, or emits a diagnostic and fails.
mlir::FailureOr<mlir::func::FuncOp>
differentiate(mlir::func::FuncOp forward, llvm::StringRef name,
              const LossScaling &scaling = {});
} // namespace weft

#endif // WEFT_PASSES_AUTODIFF_PASSES_H

//===- Passes.h - optimizer passes ------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_OPTIMIZER_PASSES_H
#define WEFT_PASSES_OPTIMIZER_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/optimizer/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/optimizer/Passes.h.inc"

/// AdamW hyperparameters (see weft-optimizer-adamw).
struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.1;
  double maxGradNorm = 1.0;
  /// The mesh symbol collectives the optimizer adds name.
  std::string mesh = "mesh";
  /// Also write each layer's gradient norm into a health probe
  /// (`<layer>/grad_norm`, weft-probes' gradients).
  bool layerGradNorms = false;
};

/// Builds the AdamW step function `name` from the gradient function `grad`:
/// the update of whole (local) tensors, each gradient's defining op tagged
/// with `weft.grad_of`. The optimizer holds no placement policy: ZeRO-1/2's
/// split of the state and update is weft-partition-optimizer's.
mlir::FailureOr<mlir::func::FuncOp> buildAdamWStep(mlir::func::FuncOp grad,
                                                   llvm::StringRef name,
                                                   const AdamWConfig &config);
} // namespace weft

#endif // WEFT_PASSES_OPTIMIZER_PASSES_H

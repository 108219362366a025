//===- Passes.h - pipeline passes -------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_PIPELINE_PASSES_H
#define WEFT_PASSES_PIPELINE_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/pipeline/Names.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/pipeline/Passes.h.inc"

/// Splits gradient function `grad` into @accumulate and the accumulated
/// gradient function (see weft-accumulate-gradients); nothing for 1.
mlir::LogicalResult accumulateGradients(mlir::func::FuncOp grad,
                                        int64_t microbatches);
} // namespace weft

#endif // WEFT_PASSES_PIPELINE_PASSES_H

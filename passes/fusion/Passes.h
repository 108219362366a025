//===- Passes.h - operator fusion -------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_FUSION_PASSES_H
#define WEFT_PASSES_FUSION_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/fusion/Passes.h.inc"

/// Groups elementwise ops of `func` into weft.fused ops; returns how many
/// groups were made. With `singleOps` (GPU bundles), an op that joins no
/// group becomes a group of one, so every elementwise op runs as a
/// generated kernel and the GPU runtime needs no kernel per op.
int64_t fuseElementwise(mlir::func::FuncOp func, bool singleOps = false);

/// Folds linear layers' bias adds, GELUs and GELU gradients in `func` into
/// weft.matmul_epilogue ops (see weft-gemm-epilogue); returns how many
/// GEMMs took an epilogue.
int64_t foldGemmEpilogues(mlir::func::FuncOp func);
} // namespace weft

#endif // WEFT_PASSES_FUSION_PASSES_H

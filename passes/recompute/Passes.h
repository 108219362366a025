//===- Passes.h - activation recomputation ----------------------*- C++ -*-===//

#ifndef WEFT_PASSES_RECOMPUTE_PASSES_H
#define WEFT_PASSES_RECOMPUTE_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/recompute/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/recompute/Passes.h.inc"

/// What weft-recompute recomputes (see its description).
enum class RecomputePolicy { None, Full, Selective };

/// The policy named `text` ("none", "full", "selective"), or an error that
/// lists them.
llvm::Expected<RecomputePolicy> parseRecomputePolicy(llvm::StringRef text);

/// Rewrites `func` (a training step) by `policy` and sets its
/// `weft.activation_bytes`; returns how many ops it recomputes.
int64_t recompute(mlir::func::FuncOp func, RecomputePolicy policy);
} // namespace weft

#endif // WEFT_PASSES_RECOMPUTE_PASSES_H

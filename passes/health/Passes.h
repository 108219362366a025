//===- Passes.h - health probes ---------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_HEALTH_PASSES_H
#define WEFT_PASSES_HEALTH_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

#include <string>

namespace weft {
#define GEN_PASS_DECL
#include "passes/health/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/health/Passes.h.inc"

/// The probes `--probes` asks for.
struct ProbeChoice {
  bool activations = false, attention = false, router = false,
       gradients = false;
  bool any() const { return activations || attention || router || gradients; }
};

/// Parses "activations,attention,router,gradients" (any subset, "" for
/// none, "all" for every one), or an error naming the unknown word.
llvm::Expected<ProbeChoice> parseProbes(llvm::StringRef text);

/// Declares at the start of `func` the probe parameter for metric `metric`
/// (zeros of `type`, state, transient) folded by `fold` ("mean", "rms",
/// "max", "max_over_mean" or "last"; see weft-probes), or returns the one
/// it has.
ParamOp declareProbe(mlir::func::FuncOp func, llvm::StringRef metric,
                     mlir::RankedTensorType type, llvm::StringRef fold);
} // namespace weft

#endif // WEFT_PASSES_HEALTH_PASSES_H

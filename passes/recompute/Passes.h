//===- Passes.h - activation recomputation ----------------------*- C++ -*-===//

#ifndef WEFT_PASSES_RECOMPUTE_PASSES_H
#define WEFT_PASSES_RECOMPUTE_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace weft {
#define GEN_PASS_DECL
#include "passes/recompute/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/recompute/Passes.h.inc"

/// What weft-recompute recomputes of a layer (see its description).
enum class RecomputePolicy { None, Full, Selective };

/// A recomputation choice as `--recompute` spells it: one policy for every
/// layer ("none", "full", "selective"), one per layer in order with runs
/// ("full*2,selective*30"), or a memory budget ("budget=8", GiB) that the
/// compiler driver resolves to a per-layer choice (buildTrainingPrograms).
struct RecomputeChoice {
  RecomputePolicy uniform = RecomputePolicy::None;
  std::vector<RecomputePolicy> layers; // Empty: `uniform` for every layer.
  std::optional<double> budgetGiB;
  /// Gather sequence-parallel activations again in the backward instead of
  /// keeping the gathered whole (weft-recompute's regather; not part of
  /// str(), which names the policy).
  bool regather = false;

  /// The policy of layer `l`.
  RecomputePolicy of(int64_t l) const {
    return layers.empty() ? uniform : layers[l];
  }
  /// The text that parses back to this choice, runs collapsed.
  std::string str() const;
};

/// Parses `text` (see RecomputeChoice), or an error that says what it
/// accepts.
llvm::Expected<RecomputeChoice> parseRecompute(llvm::StringRef text);

/// Rewrites `func` (a training step) by `choice` (not a budget) and sets
/// its `weft.recompute` and `weft.activation_bytes`; returns how many ops
/// it recomputes, or fails with an error at `func` when a per-layer choice
/// lists another number of layers than the function has.
mlir::FailureOr<int64_t> recompute(mlir::func::FuncOp func,
                                   const RecomputeChoice &choice);
} // namespace weft

#endif // WEFT_PASSES_RECOMPUTE_PASSES_H

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
/// `Tensors` names which of the layer's candidates (RecomputeCandidates) it
/// recomputes: the budget search's per-tensor choice.
enum class RecomputePolicy { None, Full, Selective, Tensors };

/// The most candidates of one layer a `tensors:` choice can name.
inline constexpr int64_t kMaxLayerCandidates = 64;

/// The `tensors:` mask naming all of `n` candidates (n at most 64).
inline uint64_t everyCandidate(int64_t n) {
  return n >= kMaxLayerCandidates ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
}

/// A recomputation choice as `--recompute` spells it: one policy for every
/// layer ("none", "full", "selective"), one per layer in order with runs
/// ("full*2,selective*30"), or a memory budget ("budget=8", GiB) that the
/// compiler driver resolves to a per-layer choice (buildTrainingPrograms).
struct RecomputeChoice {
  RecomputePolicy uniform = RecomputePolicy::None;
  std::vector<RecomputePolicy> layers; // Empty: `uniform` for every layer.
  /// Per layer whose policy is `Tensors`, its candidates recomputed (bit i:
  /// the i-th); as long as `layers` when one is.
  std::vector<uint64_t> tensors;
  std::optional<double> budgetGiB;
  /// Gather sequence-parallel activations again in the backward instead of
  /// keeping the gathered whole (weft-recompute's regather; not part of
  /// str(), which names the policy).
  bool regather = false;

  /// The policy of layer `l`.
  RecomputePolicy of(int64_t l) const {
    return layers.empty() ? uniform : layers[l];
  }
  /// The candidates layer `l` recomputes under `Tensors`.
  uint64_t tensorsOf(int64_t l) const {
    return l < static_cast<int64_t>(tensors.size()) ? tensors[l] : 0;
  }
  /// The text that parses back to this choice, runs collapsed.
  std::string str() const;
};

/// Parses `text` (see RecomputeChoice), or an error that says what it
/// accepts.
llvm::Expected<RecomputeChoice> parseRecompute(llvm::StringRef text);

/// Whether `func` is autodiff's gradient function, the only one with a
/// backward (a result marked `weft.grad`).
bool hasBackward(mlir::func::FuncOp func);

/// The per-tensor choices weft-recompute can make on a training step. A
/// layer's candidates are, in program order, the forward values `full`
/// recomputes: its activations except what a later layer reads (the next
/// layer's input), communication and the expert route. `tensors:i+j` recomputes
/// candidates i and j of a layer and keeps the rest (each made again only if
/// the backward, or the clone of another, reads it). So `none` is no candidate,
/// `full` every one, and `selective` every one but the GEMM and attention
/// outputs: asTensors() spells a per-layer choice so, and named() gives such a
/// per-tensor choice back its per-layer name where it has one.
struct RecomputeCandidates {
  int64_t layers = 0;
  /// Per layer, per candidate: whether `selective` keeps it (a GEMM's or
  /// attention's output) and the FLOPs of recomputing its op.
  std::vector<std::vector<bool>> heavy;
  std::vector<std::vector<double>> flops;

  /// Whether every layer's candidates fit a mask (at most 64): the other
  /// members need it.
  bool masksHold() const;
  /// Layer `l`'s candidates as a mask: all of them, and those `selective`
  /// recomputes (all but the heavy ones).
  uint64_t all(int64_t l) const;
  uint64_t light(int64_t l) const;
  /// How many candidates the layers have together.
  int64_t count() const;
  /// The per-tensor choice of `mask` over all the layers' candidates, the
  /// first layer's lowest (bits past count() ignored).
  RecomputeChoice fromMask(uint64_t mask) const;
  /// `choice` (a policy per layer or for all) per tensor: every layer
  /// `Tensors`.
  RecomputeChoice asTensors(const RecomputeChoice &choice) const;
  /// A per-tensor choice with each layer's mask named by its policy where
  /// one recomputes exactly it (none, selective, full).
  RecomputeChoice named(const RecomputeChoice &tensors) const;
};

/// The candidates of `func`, a training step (autodiff's gradient
/// function, before weft-recompute), or an error at `func` when it has no
/// backward. A layer with more than 64 candidates has no `tensors:`
/// choice (masksHold() says whether every layer has).
mlir::FailureOr<RecomputeCandidates>
recomputeCandidates(mlir::func::FuncOp func);

/// Rewrites `func` (a training step) by `choice` (not a budget) and sets
/// its `weft.recompute` and `weft.activation_bytes`; returns how many ops
/// it recomputes, or fails with an error at `func` when a per-layer choice
/// lists another number of layers than the function has.
mlir::FailureOr<int64_t> recompute(mlir::func::FuncOp func,
                                   const RecomputeChoice &choice);
} // namespace weft

#endif // WEFT_PASSES_RECOMPUTE_PASSES_H

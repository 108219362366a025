//===- Passes.h - placement: plans, propagation, partitioning ---*- C++ -*-===//
//
// Placement runs on @forward before autodiff: a plan declares the mesh and
// seeds shardings, propagation spreads them through the sharding rules, and
// partitioning rewrites the function into one rank's program with explicit
// collectives. Autodiff then differentiates that local program; the
// collectives' gradient rules produce the backward communication. After the
// optimizer, weft-partition-optimizer partitions the step again for ZeRO-1/2.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_SHARDING_PASSES_H
#define WEFT_PASSES_SHARDING_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace weft {
#define GEN_PASS_DECL
#include "passes/sharding/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/sharding/Passes.h.inc"

/// A parallelism plan: "dp=2,tp=2,zero=3,sp=on,microbatches=4".
struct Plan {
  /// Mesh axes in order (dp, tp, pp, ep, cp), sizes as given (1 allowed).
  std::vector<std::pair<std::string, int64_t>> axes;
  int zero = 0;                  // ZeRO stage 0..3.
  bool sequenceParallel = false; // sp=on.
  /// microbatches=M (or mb=M): each step accumulates the gradients of M
  /// micro-batches, then updates once (weft-accumulate-gradients).
  int64_t microbatches = 1;
  /// With pp: the pipeline schedule (gpipe, 1f1b, interleaved), virtual
  /// stages per rank (virtual=V, interleaved), and pinned stage boundaries
  /// (stages=0-7,8-15: layer ranges; empty: balanced by cost).
  std::string schedule = "1f1b";
  int64_t chunks = 1;
  std::string stages;
  /// With zero=3 and micro-batches: gather=step gathers each parameter once
  /// per step for all micro-batches, forward and backward (FSDP without
  /// resharding after forward, as torchtitan runs it under pp);
  /// gather=microbatch gathers it in each micro-batch's forward and again
  /// in its backward, holding only the layer in use. Empty: not given (the
  /// compiler picks step; weftc falls back to microbatch when a rank would
  /// not fit its --topology).
  std::string gather;

  /// The size of `axis`, 1 when the plan does not name it.
  int64_t size(llvm::StringRef axis) const;
  /// The number of ranks: the product of the axis sizes.
  int64_t worldSize() const;
  /// The plan as parsePlan reads it back ("dp=2,tp=2,zero=1"); empty for
  /// one rank.
  std::string str() const;
};

/// Parses a plan; errors name the offending part.
llvm::Expected<Plan> parsePlan(llvm::StringRef spec);

/// Declares the plan's mesh in `module` and seeds @forward's shardings (see
/// weft-apply-plan). Strategies not implemented yet are errors, not no-ops.
mlir::LogicalResult applyPlan(mlir::ModuleOp module, const Plan &plan);

/// Propagates shardings through `func` (see weft-sharding-propagate).
void propagateShardings(mlir::func::FuncOp func);

/// Rewrites `func` into one rank's program (see weft-partition). A program
/// that will not be differentiated (`differentiable` false) gets no
/// copy_to_group, and its assigns and annotated all-reduces are placed as
/// weft-partition-optimizer needs.
mlir::LogicalResult partition(mlir::func::FuncOp func,
                              bool differentiable = true);

/// Re-gathers ZeRO-3 parameters for the backward of the differentiated
/// `func` (see weft-reshard-after-forward); returns how many it re-gathered.
int64_t reshardAfterForward(mlir::func::FuncOp func);

/// Turns each weft.ring_shift of `func` into a send as soon as its input
/// exists and a receive before its first reader (see
/// weft-split-ring-shifts).
void splitRingShifts(mlir::func::FuncOp func);

/// Moves @accumulate's gathers of ZeRO-3 blocks into @gather, run once per
/// step (see weft-gather-per-step); returns how many parameters it moved.
/// With `fp8Codes` a quantized state counts a byte an element (FP8 storage
/// holds it as codes).
mlir::FailureOr<int64_t> gatherPerStep(mlir::ModuleOp module,
                                       bool fp8Codes = false);

/// Merges all-reduces into buckets of at most `bucketBytes` (see
/// weft-bucket-all-reduce); returns the number of collectives left.
int64_t bucketAllReduces(mlir::func::FuncOp func, int64_t bucketBytes);

/// The name of the mesh weft-apply-plan declares.
inline constexpr const char *kMeshName = "mesh";
} // namespace weft

#endif // WEFT_PASSES_SHARDING_PASSES_H

//===- Passes.h - pipeline passes -------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_PIPELINE_PASSES_H
#define WEFT_PASSES_PIPELINE_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/pipeline/Names.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace weft {
#define GEN_PASS_DECL
#include "passes/pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/pipeline/Passes.h.inc"

/// Splits gradient function `grad` into @accumulate and the accumulated
/// gradient function (see weft-accumulate-gradients); nothing for 1.
mlir::LogicalResult accumulateGradients(mlir::func::FuncOp grad,
                                        int64_t microbatches);

/// How many layers `body`'s parameters name (`weft.layer`, from 0; 0 when
/// none does); an error from `pass` at a parameter with a negative one.
mlir::FailureOr<int64_t> countLayers(mlir::Block &body, llvm::StringRef pass);

/// Each value of `body` computed from a layer's parameters (`weft.layer`),
/// with the latest layer it is computed from (the residual stream moves
/// forward only, so this is the layer it belongs to); values computed from
/// no layer's parameters (embeddings, positions) are absent.
llvm::DenseMap<mlir::Value, int64_t> valueLayers(mlir::Block &body);

/// Cuts `forward` to its first `keep` layers: the ops of the later ones
/// and their parameters go, and what read the last layer's output (the
/// final norm, the head) reads layer keep - 1's (see weft-slice-layers).
mlir::LogicalResult sliceLayers(mlir::func::FuncOp forward, int64_t keep);

/// Cuts `forward` to the layers `keep` (rising, from 0): what read a
/// dropped layer's output reads the kept layer's before it.
mlir::LogicalResult sliceLayers(mlir::func::FuncOp forward,
                                llvm::ArrayRef<int64_t> keep);

/// Rewrites `forward` (taking [B, S] token ids first) at `batch` sequences
/// a micro-batch, as a frontend would build it (see weft-rebatch); fails
/// with an error naming the op it cannot follow. With `capacityGroup`, a
/// capacity-limited expert routes that many times the batch's tokens as
/// one group (ModelBuildOptions::capacityGroup): its capacity is the
/// group's.
mlir::LogicalResult rebatch(mlir::func::FuncOp forward, int64_t batch,
                            int64_t capacityGroup = 1);

/// Each layer's kind in `forward`: layers whose ops (by name and result
/// types, from after the previous layer's output to its own) are alike
/// share one, numbered from 0 in the order they first appear (a uniform
/// model: all 0). Fails (with an error) where sliceLayers would find no
/// layer output.
mlir::FailureOr<std::vector<int64_t>> layerKinds(mlir::func::FuncOp forward);

/// Cuts @forward's layers into `stages` contiguous stages (balanced by
/// cost, or as `boundaries` pins them: "0-7,8-15") and marks every
/// parameter and op with its stage (see weft-pipeline-assign-stages).
mlir::LogicalResult assignStages(mlir::func::FuncOp forward, int64_t stages,
                                 llvm::StringRef boundaries);

/// The layer ranges [first, last] of `stages` contiguous stages of layers
/// costing `layerCosts`, the first stage also costing `before` and the
/// last `after`, whose largest stage costs least. With `stageScales` (one
/// per stage), stage k's layers cost that many times theirs (a stage on
/// faster kernels, e.g. another FP8 recipe).
std::vector<std::pair<int64_t, int64_t>>
balanceStages(llvm::ArrayRef<double> layerCosts, double before, double after,
              int64_t stages, llvm::ArrayRef<double> stageScales = {});

/// Reads pinned stage boundaries ("0-7,8-15"): `stages` ranges covering
/// layers 0 to layers - 1 in order, without gaps or overlaps.
llvm::Expected<std::vector<std::pair<int64_t, int64_t>>>
parseStageBoundaries(llvm::StringRef spec, int64_t layers, int64_t stages);

/// Cuts @accumulate and @step into per-stage forward and backward
/// programs and per-rank steps, and leaves the schedule table on the module
/// (see weft-pipeline-split).
mlir::LogicalResult splitStages(mlir::ModuleOp module, llvm::StringRef schedule,
                                int64_t chunks);
} // namespace weft

#endif // WEFT_PASSES_PIPELINE_PASSES_H

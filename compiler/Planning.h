//===- Planning.h - the planner's slices, compiled ---------------*- C++
//-*-===//
//
// The ProfileFn the planner (passes/planner/Planner.h) asks for what a
// layer costs: it builds the model from its config with one layer and with
// two, runs the training pipeline on each with the slice's configuration
// (tp and sp as a plan with two micro-batches of the slice's size, the
// recomputation policy, the FP8 recipe), and reads the placement report
// (memory) and the cost model's time of the lowered programs: @forward,
// @accumulate (forward and backward of one micro-batch) and @step (the
// update). Two layers minus one is a layer; one layer minus that is the
// rest of the model. The rest is compiled once per (tp, sp, micro-batch),
// without recomputation or FP8, which leave it as it is. A model read from
// .mlir is cut to one and two layers instead (weft-slice-layers) and
// rewritten at the slice's micro-batch (weft-rebatch).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_COMPILER_PLANNING_H
#define WEFT_COMPILER_PLANNING_H

#include "compiler/Pipeline.h"
#include "frontend/models/ModelConfig.h"
#include "passes/planner/Planner.h"

#include "mlir/IR/MLIRContext.h"

namespace weft {

/// The planner's view of `config` trained at `batch` x `seq` in `dtype`.
planner::ModelShape modelShape(const ModelConfig &config, int64_t batch,
                               int64_t seq, llvm::StringRef dtype);

/// The planner's view of a model read from .mlir, trained in steps of
/// `batch` sequences (0: as many as its @forward's tokens, [batch, seq]),
/// its layers its parameters' `weft.layer` (their kinds where they
/// differ); the slices are cut from it (weft-slice-layers) at each
/// micro-batch the search tries (weft-rebatch). An error for a model
/// without layers or an embedding, a layer 0 unlike every other, or one
/// those passes cannot cut or rewrite.
llvm::Expected<planner::ModelShape> modelShape(mlir::ModuleOp model,
                                               int64_t batch);

/// Compiles slices of `config` (sequences of `seq` in `dtype`) with the
/// settings of `base` (AdamW, buckets; its plan, recomputation and FP8 are
/// the slice's), for CUDA kernels when `cuda`, timed on `topology`. The
/// function keeps `context` and its arguments by reference and memoizes.
planner::ProfileFn sliceProfiler(mlir::MLIRContext &context,
                                 const ModelConfig &config, int64_t seq,
                                 const std::string &dtype,
                                 const Topology &topology,
                                 const TrainingOptions &base, bool cuda);

/// Compiles slices of `model` (read from .mlir; `shape` is its modelShape):
/// it is cut to layer 0 and to layer 0 with another (weft-slice-layers:
/// of each kind when its layers differ), each cut kept, and a copy of the
/// cut rewritten at the slice's micro-batch (weft-rebatch). Keeps `model`
/// by reference, as the other overload.
planner::ProfileFn sliceProfiler(mlir::MLIRContext &context,
                                 mlir::ModuleOp model,
                                 const planner::ModelShape &shape,
                                 const Topology &topology,
                                 const TrainingOptions &base, bool cuda);

/// `plan` as the planner's candidate for a step of `batch` sequences, with
/// one recomputation policy for every layer (none, selective or full) and
/// `fp8`; an error for a batch the plan does not split, a schedule its
/// micro-batches cannot run, or stages that do not cover the `layers`.
llvm::Expected<planner::Candidate> candidateFor(const Plan &plan, int64_t batch,
                                                int64_t layers,
                                                const std::string &recompute,
                                                const std::string &fp8);

} // namespace weft

#endif // WEFT_COMPILER_PLANNING_H

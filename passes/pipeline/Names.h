//===- Names.h - names the pipeline passes leave in the IR ---*- C++ -*-===//
//
// What weft-accumulate-gradients and the stage passes write and later
// stages read (lowering's
// train schedule, the memory report). Constants only, so readers need not
// depend on the pass's generated declarations.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PIPELINE_NAMES_H
#define WEFT_PASSES_PIPELINE_NAMES_H

namespace weft {

/// The per-micro-batch program weft-accumulate-gradients makes.
inline constexpr const char *kAccumulateFunc = "accumulate";
/// Its copy for a step's last micro-batch under ZeRO-0 data parallelism (or
/// an f32 model's ZeRO-1):
/// it all-reduces each accumulator as soon as that micro-batch's gradient
/// is added, so the reductions run under its backward (Megatron's
/// overlap_grad_reduce with gradient accumulation) instead of after it in
/// the step. The train schedule runs @accumulate for the others; with a
/// pipeline, weft-pipeline-split cuts it into each stage's
/// `stage<s>.backward_last` (or `.wgrad_last`), which the schedule runs
/// for the last micro-batch.
inline constexpr const char *kAccumulateLastFunc = "accumulate_last";
/// On @accumulate_last's all-reduces of accumulators: which programs of a
/// pipeline stage need a last-micro-batch copy.
inline constexpr const char *kLastReductionAttr = "weft.last_reduction";
/// The name suffix of those copies.
inline constexpr const char *kLastSuffix = "_last";
/// Its attribute: how many micro-batches one step runs it for.
inline constexpr const char *kMicrobatchesAttr = "weft.microbatches";
/// The suffix of a parameter's gradient accumulator.
inline constexpr const char *kGradAccumulatorSuffix = ".grad_acc";
/// The program weft-gather-per-step makes: run once per step before the
/// micro-batches, it gathers ZeRO-3 parameters into their `.gathered`
/// state (with pp, one per rank: `rank<r>.gather`).
inline constexpr const char *kGatherFunc = "gather";
inline constexpr const char *kGatheredSuffix = ".gathered";

/// The mesh axis pipeline stages are placed along.
inline constexpr const char *kPipelineAxis = "pp";
/// On a function weft-pipeline-assign-stages cut: how many stages.
inline constexpr const char *kStagesAttr = "weft.stages";
/// On the module after weft-pipeline-split: the schedule table, a
/// dictionary {schedule, microbatches, ranks: per pp rank a list of
/// [program, micro-batch, chunk]}, which weft-lower-to-sched writes as
/// the `train` schedule.
inline constexpr const char *kPipelineScheduleAttr = "weft.pipeline";

} // namespace weft

#endif // WEFT_PASSES_PIPELINE_NAMES_H

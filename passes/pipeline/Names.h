//===- Names.h - names gradient accumulation leaves in the IR ---*- C++ -*-===//
//
// What weft-accumulate-gradients writes and later stages read (lowering's
// train schedule, the memory report). Constants only, so readers need not
// depend on the pass's generated declarations.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PIPELINE_NAMES_H
#define WEFT_PASSES_PIPELINE_NAMES_H

namespace weft {

/// The per-micro-batch program weft-accumulate-gradients makes.
inline constexpr const char *kAccumulateFunc = "accumulate";
/// Its attribute: how many micro-batches one step runs it for.
inline constexpr const char *kMicrobatchesAttr = "weft.microbatches";
/// The suffix of a parameter's gradient accumulator.
inline constexpr const char *kGradAccumulatorSuffix = ".grad_acc";

} // namespace weft

#endif // WEFT_PASSES_PIPELINE_NAMES_H

//===- Families.h - graph builders of the model families --------*- C++ -*-===//
//
// Internal to frontend/models: each family adds its inputs, parameters and
// forward computation to a GraphBuilder.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FRONTEND_MODELS_FAMILIES_H
#define WEFT_FRONTEND_MODELS_FAMILIES_H

#include "frontend/GraphBuilder.h"
#include "frontend/models/ModelConfig.h"

namespace weft {

struct ModelOutputs {
  mlir::Value loss;
  mlir::Value logits;
};

/// The inputs every family takes: token ids and next-token labels, [B, S].
struct ModelInputs {
  mlir::Value tokens;
  mlir::Value labels;
};
ModelInputs addModelInputs(GraphBuilder &g, const ModelBuildOptions &options);

/// A linear layer's part in Megatron tensor parallelism: column-parallel
/// layers split their output features, row-parallel ones their input.
enum class TpRole { None, Column, Row };

/// A parameter of compute type `dtype`: declared in `dtype`, or in f32 and
/// cast to `dtype` when options.masterWeights is set. `tpDim` is the
/// dimension Megatron-style tensor parallelism splits (the output features
/// of a column-parallel layer, the input features of a row-parallel one),
/// recorded as `weft.tp_dim` for plans with tp > 1; -1: never split.
/// `tpUnit` (`weft.tp_unit`) is what each block must hold whole: a head's
/// features for attention projections, so tp must divide the head count.
mlir::Value modelParam(GraphBuilder &g, const ModelBuildOptions &options,
                       llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                       mlir::Type dtype, Init init, int64_t tpDim = -1,
                       int64_t tpUnit = 1);

/// The vocabulary table `name` ([vocab, d], split over tp by rows): the
/// config's `vocab` rows, padded to a multiple of options.vocabMultiple;
/// the padded parameter says how many rows checkpoints hold.
mlir::Value vocabParam(GraphBuilder &g, const ModelBuildOptions &options,
                       llvm::StringRef name, int64_t vocab, int64_t d,
                       mlir::Type dtype, Init init);

/// `logits` over a padded vocabulary with the padding's columns at -1e30,
/// which no softmax gives weight (so they never count in the loss and get
/// no gradient); `logits` itself when the vocabulary is not padded.
mlir::Value maskPaddedVocab(GraphBuilder &g, mlir::Value logits, int64_t vocab);

ModelOutputs buildGpt2(GraphBuilder &g, const ModelConfig &config,
                       const ModelBuildOptions &options, mlir::Type dtype);
/// Llama and Mixtral: they differ only in the feed-forward block.
ModelOutputs buildLlama(GraphBuilder &g, const ModelConfig &config,
                        const ModelBuildOptions &options, mlir::Type dtype);

} // namespace weft

#endif // WEFT_FRONTEND_MODELS_FAMILIES_H

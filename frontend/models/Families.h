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

/// A parameter of compute type `dtype`: declared in `dtype`, or in f32 and
/// cast to `dtype` when options.masterWeights is set.
mlir::Value modelParam(GraphBuilder &g, const ModelBuildOptions &options,
                       llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                       mlir::Type dtype, Init init);

ModelOutputs buildGpt2(GraphBuilder &g, const ModelConfig &config,
                       const ModelBuildOptions &options, mlir::Type dtype);
/// Llama and Mixtral: they differ only in the feed-forward block.
ModelOutputs buildLlama(GraphBuilder &g, const ModelConfig &config,
                        const ModelBuildOptions &options, mlir::Type dtype);

} // namespace weft

#endif // WEFT_FRONTEND_MODELS_FAMILIES_H

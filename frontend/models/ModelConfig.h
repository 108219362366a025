//===- ModelConfig.h - model families from Hugging Face configs -*- C++ -*-===//
//
// Reads a Hugging Face style config.json (model_type gpt2, llama or mixtral,
// with the field names transformers uses) and builds the model's forward
// graph with loss. Parameter names and layouts are exactly Hugging Face's, so
// a safetensors checkpoint of the same model maps onto the graph one to one.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FRONTEND_MODELS_MODELCONFIG_H
#define WEFT_FRONTEND_MODELS_MODELCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace weft {

enum class ModelFamily { Gpt2, Llama, Mixtral };

struct ModelConfig {
  ModelFamily family = ModelFamily::Gpt2;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t intermediateSize = 0;
  int64_t maxPositions = 0;
  double normEps = 1e-5;
  double ropeTheta = 10000.0;
  double initStd = 0.02;
  bool tieWordEmbeddings = false;
  int64_t numExperts = 0;      // mixtral: num_local_experts
  int64_t expertsPerToken = 0; // mixtral: num_experts_per_tok
  /// mixtral: `capacity_factor` (Switch / GShard): each expert keeps at
  /// most ceil(factor * tokens * k / E) pairs of a batch, in GShard's
  /// order; 0 (absent): dropless, no pair dropped (MegaBlocks).
  double capacityFactor = 0.0;
  /// mixtral: Switch's load-balancing loss E * sum_e f_e P_e over all
  /// layers' tokens, added times `router_aux_loss_coef` when
  /// `output_router_logits` is true (as Hugging Face's Mixtral does).
  double routerAuxLossCoef = 0.0;
  /// mixtral: ST-MoE's router z-loss mean(logsumexp(router logits)^2),
  /// added times `router_z_loss_coef` (0: none).
  double routerZLossCoef = 0.0;
  /// Dropout rates, in [0, 1): gpt2's `embd_pdrop` (after the embeddings),
  /// `resid_pdrop` (after each residual branch's projection) and
  /// `attn_pdrop`; llama's and mixtral's `attention_dropout`. Absent means
  /// 0 (Hugging Face's GPT2Config defaults to 0.1, which checkpoints'
  /// config.json files state).
  double embdDropout = 0.0, residDropout = 0.0, attnDropout = 0.0;
  /// What `parse` noticed that is not an error, each starting with the
  /// label: a key one edit away from a field the family reads (n_iner for
  /// n_inner) is ignored like any other unknown key, but likely a typo.
  std::vector<std::string> warnings;

  /// Parses and validates config JSON; `label` (the file name) prefixes every
  /// error, which names the offending field.
  static llvm::Expected<ModelConfig> parse(llvm::StringRef json,
                                           llvm::StringRef label);
  static llvm::Expected<ModelConfig> load(llvm::StringRef path);

  /// Parameter count from the architecture's closed form (for tests and
  /// reports; the graph's own count must agree).
  int64_t analyticParameterCount() const;
  /// The same in double (exact below 2^53), which cannot overflow: the
  /// config reader bounds it before anything is built.
  double analyticParameterCountApprox() const;
};

struct ModelBuildOptions {
  int64_t batch = 1;
  int64_t seq = 0;
  /// Element type of parameters and activations ("f32", "bf16", "f16").
  std::string dtype = "f32";
  /// With a narrow dtype: keep parameters in f32 (master weights) and cast
  /// them to dtype where they are used, so the optimizer updates f32 values
  /// while the forward and backward compute in dtype (mixed precision).
  bool masterWeights = false;
  /// The embedding and LM head get a multiple of this many rows (Megatron's
  /// make-vocab-size-divisible-by times tp, so tp divides the vocabulary):
  /// the rows past the config's vocabulary are padding, their logits
  /// masked out of the loss, and checkpoints hold only the real rows.
  int64_t vocabMultiple = 1;
  /// A capacity-limited mixture of experts routes this many times the
  /// built batch's tokens as one group (a rank of dp ranks: the planner's
  /// slice of one): the capacity is the group's, and the packed rows at most
  /// all of the built tokens' pairs.
  int64_t capacityGroup = 1;
};

/// Builds `forward(tokens: [B,S] i32, labels: [B,S] i32) -> (loss, logits)`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildModel(mlir::MLIRContext &context, const ModelConfig &config,
           const ModelBuildOptions &options);

} // namespace weft

#endif // WEFT_FRONTEND_MODELS_MODELCONFIG_H

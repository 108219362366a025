//===- Llama.cpp - Llama and Mixtral (Hugging Face layouts) ---------------===//
//
// Names and layouts follow LlamaForCausalLM and MixtralForCausalLM: nn.Linear
// weights are [out, in] (so x @ W^T), q/k use rotate_half RoPE on unpermuted
// weights, each Mixtral expert keeps its own w1/w2/w3 tensors. The experts'
// weights are stacked in the graph (reshape + concat) so one batched matmul
// runs all experts. Mixtral's router auxiliary loss is not part of the loss.
//
//===----------------------------------------------------------------------===//

#include "frontend/models/Families.h"

#include <cmath>
#include <string>

using namespace mlir;

namespace weft {

ModelOutputs buildLlama(GraphBuilder &g, const ModelConfig &c,
                        const ModelBuildOptions &o, Type dtype) {
  int64_t b = o.batch, s = o.seq, d = c.hiddenSize, hq = c.numHeads,
          hkv = c.numKvHeads, hd = c.headDim, f = c.intermediateSize;
  ModelInputs in = addModelInputs(g, o);
  Init weights = Init::normal(c.initStd);
  // x @ W^T with W an nn.Linear weight [out, in]. Megatron's tensor
  // parallelism splits the output features (dim 0) of column-parallel
  // layers (q, k, v, gate, up) and the input features (dim 1) of
  // row-parallel ones (o, down).
  // Attention projections split in whole heads (`unit` = head_dim).
  auto linear = [&](Value x, const std::string &name, int64_t din, int64_t dout,
                    TpRole tp = TpRole::None, int64_t unit = 1) {
    Value w = modelParam(g, o, name + ".weight", {dout, din}, dtype, weights,
                         tp == TpRole::Column ? 0
                         : tp == TpRole::Row  ? 1
                                              : -1,
                         unit);
    return g.matmul(x, w, false, /*transposeRhs=*/true);
  };
  auto rmsNorm = [&](Value x, const std::string &name) {
    return g.rmsNorm(
        x, modelParam(g, o, name + ".weight", {d}, dtype, Init::ones()),
        c.normEps);
  };

  g.setScope("model.embed_tokens");
  // Vocabulary-parallel (Megatron): the table and the LM head split rows.
  Value embed = vocabParam(g, o, "model.embed_tokens.weight", c.vocabSize, d,
                           dtype, weights);
  Value x = g.embedding(embed, in.tokens);

  for (int64_t layer = 0; layer < c.numLayers; ++layer) {
    g.setLayer(layer);
    std::string p = "model.layers." + std::to_string(layer);
    g.setScope(p + ".self_attn");
    Value a = rmsNorm(x, p + ".input_layernorm");
    Value q = g.rope(g.reshape(linear(a, p + ".self_attn.q_proj", d, hq * hd,
                                      TpRole::Column, hd),
                               {b, s, hq, hd}),
                     c.ropeTheta);
    Value k = g.rope(g.reshape(linear(a, p + ".self_attn.k_proj", d, hkv * hd,
                                      TpRole::Column, hd),
                               {b, s, hkv, hd}),
                     c.ropeTheta);
    Value v = g.reshape(
        linear(a, p + ".self_attn.v_proj", d, hkv * hd, TpRole::Column, hd),
        {b, s, hkv, hd});
    Value att =
        g.attention(q, k, v, 1.0 / std::sqrt(double(hd)), /*causal=*/true);
    x = g.add(x, linear(g.reshape(att, {b, s, hq * hd}),
                        p + ".self_attn.o_proj", hq * hd, d, TpRole::Row, hd));

    Value m = rmsNorm(x, p + ".post_attention_layernorm");
    if (c.family == ModelFamily::Llama) {
      g.setScope(p + ".mlp");
      Value gate =
          g.silu(linear(m, p + ".mlp.gate_proj", d, f, TpRole::Column));
      Value up = linear(m, p + ".mlp.up_proj", d, f, TpRole::Column);
      m = linear(g.mul(gate, up), p + ".mlp.down_proj", f, d, TpRole::Row);
    } else {
      std::string moe = p + ".block_sparse_moe";
      g.setScope(moe);
      int64_t tokens = b * s, e = c.numExperts;
      Value flat = g.reshape(m, {tokens, d});
      Value router = linear(flat, moe + ".gate", d, e);
      auto [gateWeights, experts] =
          g.topkGating(router, c.expertsPerToken, /*normalize=*/true);
      // Capacity = tokens: a token picks an expert at most once, so no token
      // is dropped, matching Hugging Face's Mixtral.
      Value slots = g.expertDispatch(flat, experts, e, tokens);
      auto stacked = [&](StringRef w, int64_t rows, int64_t cols) {
        SmallVector<Value> parts;
        for (int64_t j = 0; j < e; ++j)
          parts.push_back(
              g.reshape(modelParam(g, o,
                                   moe + ".experts." + std::to_string(j) + "." +
                                       w.str() + ".weight",
                                   {rows, cols}, dtype, weights),
                        {1, rows, cols}));
        return g.concat(parts, 0);
      };
      Value w1 = stacked("w1", f, d), w3 = stacked("w3", f, d),
            w2 = stacked("w2", d, f);
      Value gate = g.silu(g.matmul(slots, w1, false, true));
      Value up = g.matmul(slots, w3, false, true);
      Value out = g.matmul(g.mul(gate, up), w2, false, true);
      m = g.reshape(g.expertCombine(out, gateWeights, experts), {b, s, d});
    }
    x = g.add(x, m);
  }
  g.setLayer(-1);
  g.setScope("model.norm");
  x = rmsNorm(x, "model.norm");
  g.setScope("lm_head");
  Value head = c.tieWordEmbeddings ? embed
                                   : vocabParam(g, o, "lm_head.weight",
                                                c.vocabSize, d, dtype, weights);
  Value logits = maskPaddedVocab(
      g, g.matmul(x, head, false, /*transposeRhs=*/true), c.vocabSize);
  return {g.crossEntropy(logits, in.labels), logits};
}

} // namespace weft

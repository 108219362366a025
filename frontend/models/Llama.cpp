//===- Llama.cpp - Llama and Mixtral (Hugging Face layouts) ---------------===//
//
// Names and layouts follow LlamaForCausalLM and MixtralForCausalLM: nn.Linear
// weights are [out, in] (so x @ W^T), q/k use rotate_half RoPE on unpermuted
// weights. Mixtral's per-expert w1/w2/w3 tensors are held stacked, one
// [E, out, in] parameter each, so one grouped matmul runs all experts over
// exactly the rows routed to each and ep splits them. Routing is
// dropless unless the config gives a capacity_factor; the load-balancing
// and z losses are added as the config asks (ModelConfig).
//
//===----------------------------------------------------------------------===//

#include "frontend/models/Families.h"

#include <algorithm>
#include <cmath>
#include <optional>
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

  // Per MoE layer: the router's probabilities averaged over tokens, the
  // fraction of tokens each expert was chosen by, and the mean squared
  // log-partition (the auxiliary losses' ingredients).
  SmallVector<Value> routerProbs, expertShares, routerZ;
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
    // attention_dropout on the probabilities, a seed per layer.
    Value att = g.attention(q, k, v, 1.0 / std::sqrt(double(hd)),
                            /*causal=*/true, c.attnDropout, 1 + layer);
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
      int64_t tokens = b * s, e = c.numExperts, choices = c.expertsPerToken;
      Value flat = g.reshape(m, {tokens, d});
      Value router = linear(flat, moe + ".gate", d, e);
      auto [gateWeights, experts] = g.topkGating(router, choices,
                                                 /*normalize=*/true);
      // The packed buffer holds every kept pair: all of them when dropless,
      // at most `capacity` per expert otherwise.
      std::optional<int64_t> capacity;
      int64_t rows = tokens * choices;
      if (c.capacityFactor > 0) {
        capacity = expertCapacity(c.capacityFactor, rows * o.capacityGroup, e);
        rows = std::min(rows, e * *capacity);
      }
      auto [positions, counts] = g.expertRoute(experts, e, capacity);
      if (capacity && positions)
        positions.getDefiningOp()->setAttr(
            kCapacityFactorAttr,
            FloatAttr::get(Float64Type::get(positions.getContext()),
                           c.capacityFactor));
      Value slots = g.expertDispatch(flat, positions, rows);
      // Each weight of the experts is one parameter [E, out, in] that
      // expert parallelism splits along E (weft.expert_dim); checkpoints
      // keep Hugging Face's tensor per expert (weft.checkpoint_stack).
      auto stacked = [&](StringRef w, int64_t height, int64_t width) {
        Value v = modelParam(g, o, moe + ".experts." + w.str() + ".weight",
                             {e, height, width}, dtype, weights);
        Operation *def = v.getDefiningOp();
        if (auto castOp = dyn_cast<CastOp>(def))
          def = castOp.getInput().getDefiningOp();
        Builder b(def->getContext());
        def->setAttr(
            kCheckpointStackAttr,
            b.getStringAttr(moe + ".experts.*." + w.str() + ".weight"));
        def->setAttr(kExpertDimAttr, b.getI64IntegerAttr(0));
        return v;
      };
      Value w1 = stacked("w1", f, d), w3 = stacked("w3", f, d),
            w2 = stacked("w2", d, f);
      Value gate = g.silu(g.groupedMatmul(slots, w1, counts, true));
      Value up = g.groupedMatmul(slots, w3, counts, true);
      Value out = g.groupedMatmul(g.mul(gate, up), w2, counts, true);
      m = g.reshape(g.expertCombine(out, gateWeights, positions), {b, s, d});
      if (c.routerAuxLossCoef > 0) {
        routerProbs.push_back(g.reduceMean(g.softmax(router, 1), {0}));
        // f_e: the mean over tokens of how often e is among the k choices
        // (Hugging Face sums the [k, E] shares, as here).
        expertShares.push_back(
            g.reduceSum(g.reduceMean(g.oneHot(experts, e, dtype), {0}), {0}));
      }
      if (c.routerZLossCoef > 0) {
        // logsumexp with the row maximum taken out first.
        Value top = g.reduceMax(router, {1});
        Value shifted = g.sub(router, g.broadcast(top, {tokens, e}, {0}));
        Value lse = g.add(g.log(g.reduceSum(g.exp(shifted), {1})), top);
        routerZ.push_back(g.reduceMean(g.square(lse), {0}));
      }
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
  Value loss = g.crossEntropy(logits, in.labels);
  // The mean over layers of per-layer means: Hugging Face's concatenation
  // of every layer's tokens, each layer having the same tokens.
  auto layerMean = [&](ArrayRef<Value> perLayer) {
    Value sum = perLayer.front();
    for (Value v : perLayer.drop_front())
      sum = g.add(sum, v);
    return g.mul(sum,
                 g.constant(cast<RankedTensorType>(sum.getType()).getShape(),
                            dtype, 1.0 / double(perLayer.size())));
  };
  // A 0-d auxiliary loss in the model's dtype, times `coef`, in the loss's
  // f32.
  Type f32 = g.builder().getF32Type();
  auto scaled = [&](Value scalar, double coef) {
    if (dtype != f32)
      scalar = g.cast(scalar, f32);
    return g.mul(scalar, g.constant({}, f32, coef));
  };
  if (!routerProbs.empty()) {
    Value aux = g.reduceSum(
        g.mul(layerMean(expertShares), layerMean(routerProbs)), {0});
    loss = g.add(loss, scaled(aux, c.routerAuxLossCoef * double(c.numExperts)));
  }
  if (!routerZ.empty())
    loss = g.add(loss, scaled(layerMean(routerZ), c.routerZLossCoef));
  return {loss, logits};
}

} // namespace weft

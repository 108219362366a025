//===- Gpt2.cpp - GPT-2 (Hugging Face GPT2LMHeadModel) --------------------===//
//
// Names and layouts follow GPT2LMHeadModel's state dict: Conv1D weights are
// [in, out] (so x @ W), the LM head is tied to transformer.wte. Dropout
// sits where GPT2Model's does: after the embeddings (embd_pdrop) and after
// each residual branch's projection (resid_pdrop), and on the attention
// probabilities (attn_pdrop, inside weft.attention, as FlashAttention
// drops them); the training pipeline removes it from the evaluation
// forward.
//
//===----------------------------------------------------------------------===//

#include "frontend/models/Families.h"

#include <cmath>
#include <string>

using namespace mlir;

namespace weft {

ModelInputs addModelInputs(GraphBuilder &g, const ModelBuildOptions &o) {
  Type i32 = g.builder().getI32Type();
  return {g.input("tokens", {o.batch, o.seq}, i32),
          g.input("labels", {o.batch, o.seq}, i32)};
}

mlir::Value modelParam(GraphBuilder &g, const ModelBuildOptions &o,
                       llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                       mlir::Type dtype, Init init, int64_t tpDim,
                       int64_t tpUnit) {
  mlir::Type f32 = g.builder().getF32Type();
  bool cast = o.masterWeights && dtype != f32;
  mlir::Value param = g.param(name, shape, cast ? f32 : dtype, init);
  if (tpDim >= 0) {
    mlir::Builder &b = g.builder();
    param.getDefiningOp()->setAttr(weft::kTpDimAttr,
                                   b.getI64IntegerAttr(tpDim));
    if (tpUnit > 1)
      param.getDefiningOp()->setAttr(weft::kTpUnitAttr,
                                     b.getI64IntegerAttr(tpUnit));
  }
  return cast ? g.cast(param, dtype) : param;
}

namespace {
/// The weft.param behind `value` (a parameter, or its cast to the compute
/// type with master weights).
mlir::Operation *paramOpOf(mlir::Value value) {
  mlir::Operation *op = value.getDefiningOp();
  if (auto castOp = mlir::dyn_cast<weft::CastOp>(op))
    op = castOp.getInput().getDefiningOp();
  return op;
}
} // namespace

mlir::Value vocabParam(GraphBuilder &g, const ModelBuildOptions &o,
                       llvm::StringRef name, int64_t vocab, int64_t d,
                       mlir::Type dtype, Init init) {
  int64_t multiple = std::max<int64_t>(o.vocabMultiple, 1);
  int64_t rows = (vocab + multiple - 1) / multiple * multiple;
  mlir::Value table = modelParam(g, o, name, {rows, d}, dtype, init,
                                 /*tpDim=*/0);
  if (rows != vocab)
    paramOpOf(table)->setAttr(weft::kCheckpointRowsAttr,
                              g.builder().getI64IntegerAttr(vocab));
  return table;
}

mlir::Value maskPaddedVocab(GraphBuilder &g, mlir::Value logits,
                            int64_t vocab) {
  auto type = mlir::cast<mlir::RankedTensorType>(logits.getType());
  int64_t rows = type.getShape().back();
  if (rows == vocab)
    return logits;
  mlir::Type element = type.getElementType();
  mlir::Value mask = g.concat({g.constant({vocab}, element, 0.0),
                               g.constant({rows - vocab}, element, -1e30)},
                              0);
  return g.addBias(logits, mask);
}

ModelOutputs buildGpt2(GraphBuilder &g, const ModelConfig &c,
                       const ModelBuildOptions &o, Type dtype) {
  int64_t b = o.batch, s = o.seq, d = c.hiddenSize, h = c.numHeads,
          hd = c.headDim, f = c.intermediateSize;
  ModelInputs in = addModelInputs(g, o);
  Init weights = Init::normal(c.initStd);
  // GPT-2 scales the residual projections by 1/sqrt(2 * n_layer).
  Init residual = Init::normal(c.initStd / std::sqrt(2.0 * c.numLayers));
  // Conv1D layout: W [in, out]. Column-parallel layers split W's columns
  // and the bias; row-parallel ones W's rows, adding the whole bias after
  // the all-reduce. The fused c_attn stays whole: a head's q, k and v
  // columns are three separate blocks of it, so no contiguous split holds a
  // rank's heads. attn.c_proj is row-parallel in whole heads, and
  // propagation splits the attention by heads from it; each rank takes its
  // heads' q, k, v from the whole c_attn output (weft.shard_slice).
  auto linear = [&](Value x, const std::string &name, int64_t din, int64_t dout,
                    Init init, TpRole tp = TpRole::None, int64_t unit = 1) {
    Value w = modelParam(g, o, name + ".weight", {din, dout}, dtype, init,
                         tp == TpRole::Column ? 1
                         : tp == TpRole::Row  ? 0
                                              : -1,
                         unit);
    Value bias = modelParam(g, o, name + ".bias", {dout}, dtype, Init::zeros(),
                            tp == TpRole::Column ? 0 : -1);
    return g.addBias(g.matmul(x, w), bias);
  };
  auto layerNorm = [&](Value x, const std::string &name) {
    Value w = modelParam(g, o, name + ".weight", {d}, dtype, Init::ones());
    Value bias = modelParam(g, o, name + ".bias", {d}, dtype, Init::zeros());
    return g.layerNorm(x, w, bias, c.normEps);
  };

  g.setScope("transformer.wte");
  // Vocabulary-parallel (Megatron): the tied table splits its rows, for the
  // lookup and for the LM head.
  Value wte = vocabParam(g, o, "transformer.wte.weight", c.vocabSize, d, dtype,
                         weights);
  Value wpe = modelParam(g, o, "transformer.wpe.weight", {c.maxPositions, d},
                         dtype, weights);
  Value x = g.embedding(wte, in.tokens);
  // The position table is read by the positions (Hugging Face's
  // wpe(position_ids)), which context parallelism reorders.
  x = g.add(x,
            g.broadcast(g.embedding(wpe, g.positions(s)), {b, s, d}, {1, 2}));
  // Each dropout site draws its own mask: seeds 1, then 2 + 2 layer and
  // 3 + 2 layer after the residual branches, and 2 + 2 layers + layer on
  // the attention probabilities.
  x = g.dropout(x, c.embdDropout, 1);

  for (int64_t layer = 0; layer < c.numLayers; ++layer) {
    g.setLayer(layer);
    std::string p = "transformer.h." + std::to_string(layer);
    g.setScope(p + ".attn");
    Value a = layerNorm(x, p + ".ln_1");
    // c_attn is stored [d, 3d] (q | k | v columns) but held [d, 3, d]
    // (its bias [3, d]), the same elements in the same order, so that tp
    // splits each of q, k and v by heads: three column-parallel GEMMs.
    Value qkvWeight = modelParam(g, o, p + ".attn.c_attn.weight", {d, 3, d},
                                 dtype, weights, /*tpDim=*/2, hd);
    Value qkvBias = modelParam(g, o, p + ".attn.c_attn.bias", {3, d}, dtype,
                               Init::zeros(), /*tpDim=*/1, hd);
    paramOpOf(qkvWeight)->setAttr(weft::kCheckpointShapeAttr,
                                  g.builder().getDenseI64ArrayAttr({d, 3 * d}));
    paramOpOf(qkvBias)->setAttr(weft::kCheckpointShapeAttr,
                                g.builder().getDenseI64ArrayAttr({3 * d}));
    auto head = [&](int64_t i) {
      Value w = g.reshape(g.slice(qkvWeight, {0, i, 0}, {d, i + 1, d}), {d, d});
      Value bias = g.reshape(g.slice(qkvBias, {i, 0}, {i + 1, d}), {d});
      return g.reshape(g.addBias(g.matmul(a, w), bias), {b, s, h, hd});
    };
    Value att = g.attention(
        head(0), head(1), head(2), 1.0 / std::sqrt(double(hd)),
        /*causal=*/true, c.attnDropout, 2 + 2 * c.numLayers + layer);
    att = linear(g.reshape(att, {b, s, d}), p + ".attn.c_proj", d, d, residual,
                 TpRole::Row, hd);
    x = g.add(x, g.dropout(att, c.residDropout, 2 + 2 * layer));
    g.setScope(p + ".mlp");
    Value m = layerNorm(x, p + ".ln_2");
    m = g.gelu(linear(m, p + ".mlp.c_fc", d, f, weights, TpRole::Column));
    m = linear(m, p + ".mlp.c_proj", f, d, residual, TpRole::Row);
    x = g.add(x, g.dropout(m, c.residDropout, 3 + 2 * layer));
  }
  g.setLayer(-1);
  g.setScope("transformer.ln_f");
  x = layerNorm(x, "transformer.ln_f");
  g.setScope("lm_head");
  Value logits = maskPaddedVocab(
      g, g.matmul(x, wte, false, /*transposeRhs=*/true), c.vocabSize);
  return {g.crossEntropy(logits, in.labels), logits};
}

} // namespace weft

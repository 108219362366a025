//===- WeftDecompositions.cpp - composite ops as primitives ---------------===//
//
// Each composite op's DecomposableOpInterface::decompose builds the primitive
// ops that compute the op's documented function. The decompose lit/gtest
// suite checks every expansion against the reference evaluator.
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftEmitter.h"
#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace weft;

FailureOr<SmallVector<Value>> GeluOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Value x = getInput();
  Value x3 = e.mul(x, SquareOp::create(builder, getLoc(), x));
  Value inner = e.mul(e.splatLike(x, std::sqrt(2.0 / M_PI)),
                      e.add(x, e.mul(e.splatLike(x, 0.044715), x3)));
  Value t = TanhOp::create(builder, getLoc(), inner);
  Value y = e.mul(e.mul(e.splatLike(x, 0.5), x), e.add(e.splatLike(x, 1.0), t));
  return SmallVector<Value>{y};
}

FailureOr<SmallVector<Value>> SiluOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Value x = getInput();
  Value ex =
      ExpOp::create(builder, getLoc(), NegOp::create(builder, getLoc(), x));
  return SmallVector<Value>{e.div(x, e.add(e.splatLike(x, 1.0), ex))};
}

FailureOr<SmallVector<Value>> LayerNormOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Value x = getInput();
  int64_t last = e.typeOf(x).getRank() - 1;
  Value centered = e.sub(x, e.expandAlong(e.reduceMean(x, {last}), x, last));
  Value var =
      e.reduceMean(SquareOp::create(builder, getLoc(), centered), {last});
  Value y = e.normalize(centered, var, getEpsilon().convertToDouble());
  y = e.mul(y, e.expandLast(getWeight(), x));
  return SmallVector<Value>{e.add(y, e.expandLast(getBias(), x))};
}

FailureOr<SmallVector<Value>> RMSNormOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Value x = getInput();
  int64_t last = e.typeOf(x).getRank() - 1;
  Value ms = e.reduceMean(SquareOp::create(builder, getLoc(), x), {last});
  Value y = e.normalize(x, ms, getEpsilon().convertToDouble());
  return SmallVector<Value>{e.mul(y, e.expandLast(getWeight(), x))};
}

FailureOr<SmallVector<Value>> SoftmaxOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  return SmallVector<Value>{
      e.softmax(getInput(), static_cast<int64_t>(getDim()))};
}

FailureOr<SmallVector<Value>> CrossEntropyOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Location loc = getLoc();
  Value logits = getLogits();
  auto type = e.typeOf(logits);
  int64_t last = type.getRank() - 1;
  int64_t vocab = type.getDimSize(last);
  auto ignore = static_cast<int64_t>(getIgnoreIndex());
  // The expansion drops ignored labels through one_hot's all-zero rows, which
  // only works when the ignore index is not itself a class.
  if (ignore >= 0 && ignore < vocab) {
    emitOpError("cannot decompose: ignore_index ")
        << ignore << " is a valid class of a vocabulary of " << vocab;
    return failure();
  }
  auto f32 = builder.getF32Type();
  if (type.getElementType() != f32) {
    type = RankedTensorType::get(type.getShape(), f32);
    logits = CastOp::create(builder, loc, type, logits);
  }
  Value m = e.reduceMax(logits, {last});
  Value shifted = e.sub(logits, e.expandAlong(m, logits, last));
  Value lse = e.add(
      LogOp::create(builder, loc,
                    e.reduceSum(ExpOp::create(builder, loc, shifted), {last})),
      m);
  Value oneHot = OneHotOp::create(builder, loc, type, getLabels());
  Value picked = e.reduceSum(e.mul(oneHot, logits), {last});
  Value valid = e.reduceSum(oneHot, {last});
  Value total = e.reduceSum(e.mul(e.sub(lse, picked), valid), e.allDims(valid));
  Value count = e.reduceSum(valid, e.allDims(valid));
  Value loss =
      e.div(total, MaxOp::create(builder, loc, count, e.splatLike(count, 1.0)));
  return SmallVector<Value>{loss};
}

FailureOr<SmallVector<Value>> TopKGatingOp::decompose(OpBuilder &builder) {
  weft::detail::Emitter e{builder, getLoc()};
  Value probs = SoftmaxOp::create(builder, getLoc(), getLogits(), 1);
  auto topk = TopKOp::create(builder, getLoc(), probs, getK());
  Value weights = topk.getValues();
  if (getNormalize())
    weights =
        e.div(weights, e.expandAlong(e.reduceSum(weights, {1}), weights, 1));
  return SmallVector<Value>{weights, topk.getIndices()};
}

FailureOr<SmallVector<Value>>
AttentionEntropyOp::decompose(OpBuilder &builder) {
  // sum_t p_t scale <q, k_t> = scale <q, P K>: an attention with the keys
  // as its values, in f32 (the entropy is lse less a product of about its
  // size, which a narrow type's rounding would swamp).
  weft::detail::Emitter e{builder, getLoc()};
  Value query = e.f32(getQuery()), key = e.f32(getKey());
  auto pk = AttentionOp::create(
      builder, getLoc(), e.typeOf(query), getType(), query, key, key,
      getQueryPositions(), getKeyPositions(), Value(), Value(), getScaleAttr(),
      getCausalAttr(), FloatAttr(), IntegerAttr(), ArrayAttr(), IntegerAttr());
  // [B, S, Hq] rows, then as lse [B, Hq, S].
  Value expected = e.reduceSum(e.mul(query, pk.getResult()), {3});
  Value rows = TransposeOp::create(builder, getLoc(), getType(), expected,
                                   builder.getDenseI64ArrayAttr({0, 2, 1}));
  return SmallVector<Value>{e.sub(
      getLse(), e.mul(rows, e.splatLike(rows, getScale().convertToDouble())))};
}

FailureOr<SmallVector<Value>> AttentionOp::decompose(OpBuilder &builder) {
  // The mask below is a constant of indices; positions are data.
  if (getQueryPositions())
    return emitOpError("with positions has no decomposition (its mask "
                       "depends on the positions' values)"),
           failure();
  weft::detail::Emitter e{builder, getLoc()};
  Location loc = getLoc();
  auto qType = e.typeOf(getQuery()), kType = e.typeOf(getKey()),
       vType = e.typeOf(getValue());
  int64_t batch = qType.getDimSize(0), s = qType.getDimSize(1),
          hq = qType.getDimSize(2), t = kType.getDimSize(1),
          hkv = kType.getDimSize(2);
  int64_t group = hq / hkv;
  Type elt = qType.getElementType();
  SmallVector<int64_t> headsFirst = {0, 2, 1, 3};

  // [B, T, Hkv, D] -> [B, Hq, T, D], repeating each kv head `group` times
  // (query head h reads kv head h / group, as Hugging Face's repeat_kv).
  auto toHeads = [&](Value kv, RankedTensorType type) -> Value {
    Value x = TransposeOp::create(builder, loc, kv, headsFirst);
    if (group == 1)
      return x;
    int64_t d = type.getDimSize(3);
    auto wide = RankedTensorType::get({batch, hkv, group, t, d}, elt);
    x = BroadcastOp::create(builder, loc, wide, x,
                            ArrayRef<int64_t>{0, 1, 3, 4});
    return ReshapeOp::create(builder, loc,
                             RankedTensorType::get({batch, hq, t, d}, elt), x);
  };
  Value q = TransposeOp::create(builder, loc, getQuery(), headsFirst);
  Value k = toHeads(getKey(), kType);
  Value v = toHeads(getValue(), vType);

  Value scores = MatmulOp::create(builder, loc, q, k, /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true);
  scores = e.mul(scores, e.splatLike(scores, getScale().convertToDouble()));
  if (getCausal()) {
    auto maskType = RankedTensorType::get({s, t}, elt);
    const auto &sem = cast<FloatType>(elt).getFloatSemantics();
    APFloat blocked = APFloat::getInf(sem, /*Negative=*/true);
    if (!blocked.isInfinity()) // f8E4M3FN has no infinity.
      blocked = APFloat::getLargest(sem, /*Negative=*/true);
    SmallVector<APFloat> mask;
    mask.reserve(s * t);
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < t; ++j)
        mask.push_back(j <= i + (t - s) ? APFloat::getZero(sem) : blocked);
    Value maskValue = ConstantOp::create(
        builder, loc, DenseElementsAttr::get(maskType, mask));
    scores =
        e.add(scores, BroadcastOp::create(builder, loc, e.typeOf(scores),
                                          maskValue, ArrayRef<int64_t>{2, 3}));
  }
  // lse over the visible keys, then the probabilities from it, as a flash
  // kernel computes them: p = e^(s - lse).
  Value m = e.reduceMax(scores, {3});
  Value shifted = e.sub(scores, e.expandAlong(m, scores, 3));
  Value lse = e.add(
      LogOp::create(builder, loc,
                    e.reduceSum(ExpOp::create(builder, loc, shifted), {3})),
      m);
  Value probs =
      ExpOp::create(builder, loc, e.sub(scores, e.expandAlong(lse, scores, 3)));
  // Dropout of the [B, Hq, S, T] probabilities is weft.dropout's mask of
  // them: the same block (batch and heads as the query's split).
  if (getDropout()) {
    ArrayAttr split;
    if (std::optional<ArrayAttr> q = getSplit())
      split = builder.getArrayAttr({(*q)[0], (*q)[2], (*q)[1], (*q)[3]});
    probs = DropoutOp::create(builder, loc, probs, getStep(), getMicrobatch(),
                              /*positions=*/Value(), getDropoutAttr(),
                              getSeedAttr(), split, getMicrobatchesAttr());
  }
  Value out = MatmulOp::create(builder, loc, probs, v, false, false);
  auto f32 = builder.getF32Type();
  if (elt != f32)
    lse = CastOp::create(builder, loc,
                         RankedTensorType::get(e.typeOf(lse).getShape(), f32),
                         lse);
  return SmallVector<Value>{TransposeOp::create(builder, loc, out, headsFirst),
                            lse};
}

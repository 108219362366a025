//===- WeftDecompositions.cpp - composite ops as primitives ---------------===//
//
// Each composite op's DecomposableOpInterface::decompose builds the primitive
// ops that compute the op's documented function. The decompose lit/gtest
// suite checks every expansion against the reference evaluator.
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace weft;

namespace {
/// Small helpers that keep the expansions readable.
struct Emitter {
  OpBuilder &b;
  Location loc;

  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  /// A splat constant of `like`'s type (or shape with element type `elt`).
  Value splat(RankedTensorType type, double value) {
    Attribute elt;
    if (isa<FloatType>(type.getElementType())) {
      auto ft = cast<FloatType>(type.getElementType());
      APFloat f(value);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      elt = FloatAttr::get(ft, f);
    } else {
      elt =
          IntegerAttr::get(type.getElementType(), static_cast<int64_t>(value));
    }
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, elt));
  }
  Value splatLike(Value like, double value) {
    return splat(typeOf(like), value);
  }

  /// Broadcasts `v`, which is `like` with dimension `dim` reduced away, back
  /// to `like`'s shape.
  Value expandAlong(Value v, Value like, int64_t dim) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < typeOf(like).getRank(); ++d)
      if (d != dim)
        dims.push_back(d);
    return BroadcastOp::create(b, loc, typeOf(like), v, dims);
  }
  /// Broadcasts a [D] vector along the last dimension of `like`.
  Value expandLast(Value vec, Value like) {
    return BroadcastOp::create(b, loc, typeOf(like), vec,
                               ArrayRef<int64_t>{typeOf(like).getRank() - 1});
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value reduceSum(Value x, ArrayRef<int64_t> dims) {
    return ReduceSumOp::create(b, loc, x, dims);
  }
  Value reduceMax(Value x, ArrayRef<int64_t> dims) {
    return ReduceMaxOp::create(b, loc, x, dims);
  }
  Value reduceMean(Value x, ArrayRef<int64_t> dims) {
    return ReduceMeanOp::create(b, loc, x, dims);
  }
  SmallVector<int64_t> allDims(Value x) {
    SmallVector<int64_t> dims(typeOf(x).getRank());
    std::iota(dims.begin(), dims.end(), 0);
    return dims;
  }

  /// x / sqrt(mean-square-like statistic + eps) along the last dim, shared by
  /// both norms: returns x * rsqrt(stat + eps) with stat broadcast back.
  Value normalize(Value x, Value stat, double eps) {
    int64_t last = typeOf(x).getRank() - 1;
    Value s = expandAlong(stat, x, last);
    Value inv = RsqrtOp::create(b, loc, add(s, splatLike(x, eps)));
    return mul(x, inv);
  }

  Value softmax(Value x, int64_t dim) {
    Value m = expandAlong(reduceMax(x, {dim}), x, dim);
    Value e = ExpOp::create(b, loc, sub(x, m));
    return div(e, expandAlong(reduceSum(e, {dim}), x, dim));
  }
};
} // namespace

FailureOr<SmallVector<Value>> GeluOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
  Value x = getInput();
  Value x3 = e.mul(x, SquareOp::create(builder, getLoc(), x));
  Value inner = e.mul(e.splatLike(x, std::sqrt(2.0 / M_PI)),
                      e.add(x, e.mul(e.splatLike(x, 0.044715), x3)));
  Value t = TanhOp::create(builder, getLoc(), inner);
  Value y = e.mul(e.mul(e.splatLike(x, 0.5), x), e.add(e.splatLike(x, 1.0), t));
  return SmallVector<Value>{y};
}

FailureOr<SmallVector<Value>> SiluOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
  Value x = getInput();
  Value ex =
      ExpOp::create(builder, getLoc(), NegOp::create(builder, getLoc(), x));
  return SmallVector<Value>{e.div(x, e.add(e.splatLike(x, 1.0), ex))};
}

FailureOr<SmallVector<Value>> LayerNormOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
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
  Emitter e{builder, getLoc()};
  Value x = getInput();
  int64_t last = e.typeOf(x).getRank() - 1;
  Value ms = e.reduceMean(SquareOp::create(builder, getLoc(), x), {last});
  Value y = e.normalize(x, ms, getEpsilon().convertToDouble());
  return SmallVector<Value>{e.mul(y, e.expandLast(getWeight(), x))};
}

FailureOr<SmallVector<Value>> SoftmaxOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
  return SmallVector<Value>{
      e.softmax(getInput(), static_cast<int64_t>(getDim()))};
}

FailureOr<SmallVector<Value>> CrossEntropyOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
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
  Emitter e{builder, getLoc()};
  Value probs = SoftmaxOp::create(builder, getLoc(), getLogits(), 1);
  auto topk = TopKOp::create(builder, getLoc(), probs, getK());
  Value weights = topk.getValues();
  if (getNormalize())
    weights =
        e.div(weights, e.expandAlong(e.reduceSum(weights, {1}), weights, 1));
  return SmallVector<Value>{weights, topk.getIndices()};
}

FailureOr<SmallVector<Value>> AttentionOp::decompose(OpBuilder &builder) {
  Emitter e{builder, getLoc()};
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
  // A composite softmax, so a backend may keep it for a fused kernel.
  Value probs = SoftmaxOp::create(builder, loc, scores, 3);
  Value out = MatmulOp::create(builder, loc, probs, v, false, false);
  return SmallVector<Value>{TransposeOp::create(builder, loc, out, headsFirst)};
}

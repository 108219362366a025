//===- WeftGradients.cpp - reverse-mode gradient rules of weft ops --------===//
//
// GradientOpInterface::buildGradients for every differentiable op. Each rule
// is the textbook adjoint written with weft ops; composites use their fused
// gradient ops (attention_grad, layer_norm_grad, cross_entropy_grad). The
// autodiff gtests check every rule against central finite differences.
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftEmitter.h"
#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace weft;

using weft::detail::Emitter;
using Grads = FailureOr<SmallVector<Value>>;

namespace {
Grads grads(std::initializer_list<Value> values) {
  return SmallVector<Value>(values);
}

/// The incoming gradient of a single-result op (never null: autodiff only
/// asks ops that have at least one result gradient).
Value single(ArrayRef<Value> resultGrads) { return resultGrads.front(); }

/// `amax` max-reduced over the axes `marked` records as `axesAttr` on the
/// mesh of kAmaxMeshAttr (partitioning's record of the ranks one block
/// spans), or `amax` itself when it records none.
Value maxOverRecordedAxes(OpBuilder &b, Location loc, Value amax,
                          Operation *marked, StringRef axesAttr) {
  auto axes = marked->getAttrOfType<ArrayAttr>(axesAttr);
  auto mesh = marked->getAttrOfType<FlatSymbolRefAttr>(kAmaxMeshAttr);
  if (!axes || !mesh || axes.empty())
    return amax;
  return AllReduceOp::create(
             b, loc, ReduceKindAttr::get(b.getContext(), ReduceKind::Max),
             ValueRange{amax}, mesh, axes)
      .getResult(0);
}

/// Whether `op` precedes the builder's insertion point in its block (a
/// value it defines can be read there).
bool precedesInsertion(OpBuilder &b, Operation *op) {
  return op->getBlock() == b.getInsertionBlock() &&
         (b.getInsertionPoint() == b.getInsertionBlock()->end() ||
          op->isBeforeInBlock(&*b.getInsertionPoint()));
}

/// A user of `v` that precedes the insertion point and computes what a
/// clone of `like` reading `v` would (same op, attributes and types), or
/// null. The backward's re-quantizations and what reads them are shared
/// this way: autodiff builds each GEMM's gradient on its own.
Operation *sameUser(OpBuilder &b, Value v, Operation *like) {
  for (Operation *user : v.getUsers())
    if (user != like && user->getName() == like->getName() &&
        user->getNumOperands() == 1 &&
        user->getAttrDictionary() == like->getAttrDictionary() &&
        user->getResultTypes() == like->getResultTypes() &&
        precedesInsertion(b, user))
      return user;
  return nullptr;
}

/// What a backward GEMM reads for `v`, a forward GEMM's operand or its
/// output gradient, contracting it along `dims`: `v`, unless `v` is an FP8
/// quantization with a backward_block whose blocks are one element thick
/// along every one of `dims` (seen through casts, partitioning's
/// copy_to_group and a gather of the quantized values). Its scales would
/// then change along the contraction, which no scaled GEMM takes; the GEMM
/// reads the quantization's input quantized again with backward_block
/// instead, its maxima max-reduced over the axes partitioning recorded,
/// then cast and gathered as the forward's was (a sequence-parallel
/// activation is gathered again, as Megatron's weight gradient does). The
/// input is read as the forward keeps it (a bf16 activation as bf16).
/// GEMMs reading one such re-quantization share it (the weight gradients
/// of q, k and v read one of their input).
Value fp8ForBackward(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> dims) {
  SmallVector<Operation *> chain; // From the quantization outwards.
  Value quantized = v;
  while (Operation *def = quantized.getDefiningOp()) {
    if (!isa<CastOp, CopyToGroupOp, AllGatherOp>(def))
      break;
    chain.push_back(def);
    quantized = def->getOperand(0);
  }
  std::reverse(chain.begin(), chain.end());
  auto q = quantized.getDefiningOp<Fp8QuantizeOp>();
  if (!q || !q.getBackwardBlock())
    return v;
  ArrayRef<int64_t> shape = q.getInput().getType().getShape(),
                    grid = q.getAmax().getType().getShape();
  // `dims` are v's; the chain's gathers change sizes, not dimensions.
  if (llvm::any_of(dims, [&](int64_t d) { return shape[d] != grid[d]; }))
    return v;
  ArrayRef<int64_t> block = *q.getBackwardBlock();
  auto amaxType = RankedTensorType::get(fp8Grid(shape, block), b.getF32Type());
  Value stored = q.getInput();
  Fp8QuantizeOp again;
  // The axes a re-quantization's maxima were reduced over (for `other`),
  // or are to be (for q): a shared one must have the same.
  auto reducedOver = [&](Operation *op) -> Attribute {
    if (op == q.getOperation())
      return q->getAttr(kBackwardAmaxAxesAttr);
    auto reduce =
        cast<Fp8QuantizeOp>(op).getAmax().getDefiningOp<AllReduceOp>();
    return reduce ? reduce.getAxesAttr() : Attribute();
  };
  for (Operation *user : stored.getUsers())
    if (auto other = dyn_cast<Fp8QuantizeOp>(user);
        other && other != q && other.getInput() == stored &&
        other->hasAttr(kFp8BackwardAttr) &&
        reducedOver(other) == reducedOver(q.getOperation()) &&
        other.getAmax().getType() == amaxType &&
        other.getFormat() == q.getFormat() &&
        other.getPow2Scales() == q.getPow2Scales() &&
        precedesInsertion(b, other))
      again = other;
  if (!again) {
    Value amax =
        maxOverRecordedAxes(b, loc, Fp8AmaxOp::create(b, loc, amaxType, stored),
                            q, kBackwardAmaxAxesAttr);
    again = Fp8QuantizeOp::create(b, loc, stored, amax, q.getFormatAttr(),
                                  q.getPow2ScalesAttr(), nullptr, nullptr);
    again->setAttr(kFp8BackwardAttr, b.getUnitAttr());
  }
  // The forward's casts and gathers again; copy_to_group is the identity
  // (its gradient, an all-reduce, stays with the forward's).
  Value result = again;
  for (Operation *op : chain) {
    if (isa<CopyToGroupOp>(op))
      continue;
    if (Operation *same = sameUser(b, result, op)) {
      result = same->getResult(0);
      continue;
    }
    IRMapping map;
    map.map(op->getOperand(0), result);
    result = b.clone(*op, map)->getResult(0);
  }
  return result;
}

/// What an expert weight gradient reads for `v`, rows of the groups of
/// `sizes` of `experts` experts: `v`, unless `v` is an FP8 quantization
/// with `group_rows`, whose input the gradient then reads quantized again
/// in tiles of each expert's rows (weft.fp8_group_quantize), so that its
/// scales are constant along each 32-row block it sums. The gate and up
/// projections' weight gradients share their input's.
Value fp8ForGroups(OpBuilder &b, Location loc, Value v, Value sizes,
                   int64_t experts) {
  auto q = v.getDefiningOp<Fp8QuantizeOp>();
  if (!q || !q.getGroupRows())
    return v;
  for (Operation *user : q.getInput().getUsers())
    if (auto other = dyn_cast<Fp8GroupQuantizeOp>(user);
        other && other.getSizes() == sizes &&
        other.getRows() == *q.getGroupRows() &&
        static_cast<int64_t>(other.getExperts()) == experts &&
        other.getFormat() == q.getFormat() &&
        other.getPow2Scales() == q.getPow2Scales() &&
        precedesInsertion(b, other))
      return other;
  return Fp8GroupQuantizeOp::create(b, loc, q.getInput(), sizes, q.getFormat(),
                                    *q.getGroupRows(), experts,
                                    q.getPow2Scales());
}

/// Sums `g` over its leading `count` dimensions.
Value sumLeading(Emitter &e, Value g, int64_t count) {
  if (count == 0)
    return g;
  SmallVector<int64_t> dims(count);
  std::iota(dims.begin(), dims.end(), 0);
  return e.reduceSum(g, dims);
}
} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Grads NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({Emitter{b, getLoc()}.neg(single(rg))});
}
Grads ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({Emitter{b, getLoc()}.mul(single(rg), getResult())});
}
Grads LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({Emitter{b, getLoc()}.div(single(rg), getInput())});
}
Grads TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  Value z = getResult();
  Value deriv = e.sub(e.splatLike(z, 1.0), SquareOp::create(b, getLoc(), z));
  return grads({e.mul(single(rg), deriv)});
}
Grads SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  Value z = getResult();
  return grads({e.div(e.mul(single(rg), e.splatLike(z, 0.5)), z)});
}
Grads RsqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 z^3.
  Emitter e{b, getLoc()};
  Value z = getResult();
  Value z3 = e.mul(z, SquareOp::create(b, getLoc(), z));
  return grads({e.mul(single(rg), e.mul(e.splatLike(z, -0.5), z3))});
}
Grads SquareOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  Value x = getInput();
  return grads({e.mul(single(rg), e.mul(e.splatLike(x, 2.0), x))});
}
Grads PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  double p = getExponent().convertToDouble();
  Value x = getInput();
  Value lower =
      p == 2.0
          ? x
          : PowOp::create(b, getLoc(), x, b.getF64FloatAttr(p - 1)).getResult();
  return grads({e.mul(single(rg), e.mul(e.splatLike(x, p), lower))});
}
Grads GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({GeluGradOp::create(b, getLoc(), getInput(), single(rg))});
}
Grads SiluOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({SiluGradOp::create(b, getLoc(), getInput(), single(rg))});
}

Grads AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({single(rg), single(rg)});
}
Grads SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({single(rg), Emitter{b, getLoc()}.neg(single(rg))});
}
Grads MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  return grads({e.mul(single(rg), getRhs()), e.mul(single(rg), getLhs())});
}
Grads DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // z = x / y: dx = g / y, dy = -g z / y.
  Emitter e{b, getLoc()};
  Value g = single(rg);
  return grads(
      {e.div(g, getRhs()), e.neg(e.div(e.mul(g, getResult()), getRhs()))});
}
Grads MaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  Value g = single(rg);
  Value mask = GeOp::create(b, getLoc(), getLhs(), getRhs());
  Value rest = e.sub(e.splatLike(mask, 1.0), mask);
  return grads({e.mul(g, mask), e.mul(g, rest)});
}

//===----------------------------------------------------------------------===//
// Linear algebra and shapes
//===----------------------------------------------------------------------===//

/// MatmulOp's gradients, C = op(A) op(B): d op(A) = dC op(B)^T reading
/// `gInput` and d op(B) = op(A)^T dC reading `gWeight` (the one output
/// gradient, quantized for each GEMM under FP8), written with transpose
/// flags so no transpose is materialised.
static Grads matmulGradients(OpBuilder &b, Location loc, Value gInput,
                             Value gWeight, Value lhs, Value rhs, bool ta,
                             bool tb) {
  Emitter e{b, loc};
  int64_t batch = e.typeOf(gInput).getRank() - 2;
  Value da = ta ? MatmulOp::create(b, loc, rhs, gInput, tb, true).getResult()
                : MatmulOp::create(b, loc, gInput, rhs, false, !tb).getResult();
  // An operand without batch dims (a weight) was shared by every batch: its
  // gradient sums over them.
  if (e.typeOf(lhs).getRank() == 2)
    da = sumLeading(e, da, batch);
  Value db, g = gWeight;
  if (e.typeOf(rhs).getRank() == 2 && batch > 0 && !ta) {
    // Fold the batch into the rows ([B..., M, K] -> [B*M, K], a view) so one
    // GEMM both multiplies and sums over the batch.
    auto fold = [&](Value v) {
      auto type = e.typeOf(v);
      return e.reshape(v, RankedTensorType::get(
                              {type.getNumElements() / type.getShape().back(),
                               type.getShape().back()},
                              type.getElementType()));
    };
    Value a2 = fold(lhs), g2 = fold(g);
    db = tb ? MatmulOp::create(b, loc, g2, a2, true, false).getResult()
            : MatmulOp::create(b, loc, a2, g2, true, false).getResult();
  } else {
    db = tb ? MatmulOp::create(b, loc, g, lhs, true, ta).getResult()
            : MatmulOp::create(b, loc, lhs, g, !ta, false).getResult();
    if (e.typeOf(rhs).getRank() == 2)
      db = sumLeading(e, db, batch);
  }
  return grads({da, db});
}

MatmulBackwardDims weft::matmulBackwardDims(MatmulOp op) {
  auto rank = [](Value v) { return cast<ShapedType>(v.getType()).getRank(); };
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t batch = rank(op.getResult()) - 2, ra = rank(op.getLhs()),
          rb = rank(op.getRhs());
  MatmulBackwardDims dims;
  if (rb == 2 && !ta) // matmulGradients folds the batch into the rows.
    for (int64_t d = 0; d < batch; ++d)
      dims.lhs.push_back(d), dims.weightGrad.push_back(d);
  dims.lhs.push_back(ta ? ra - 1 : ra - 2);
  dims.weightGrad.push_back(batch);
  dims.rhs.push_back(tb ? rb - 2 : rb - 1);
  dims.grad.push_back(batch + 1);
  return dims;
}

Grads MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // FP8 operands whose scales do not run along a backward GEMM's
  // contraction are quantized again for it (fp8ForBackward).
  // One after another, so the backward's order is fixed.
  MatmulBackwardDims dims = matmulBackwardDims(*this);
  Value g = single(rg);
  Value gInput = fp8ForBackward(b, getLoc(), g, dims.grad);
  Value gWeight = fp8ForBackward(b, getLoc(), g, dims.weightGrad);
  Value rhs = fp8ForBackward(b, getLoc(), getRhs(), dims.rhs);
  Value lhs = fp8ForBackward(b, getLoc(), getLhs(), dims.lhs);
  return matmulGradients(b, getLoc(), gInput, gWeight, lhs, rhs,
                         getTransposeLhs(), getTransposeRhs());
}

Grads ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads(
      {Emitter{b, getLoc()}.reshape(single(rg), getInput().getType())});
}

Grads TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return grads({TransposeOp::create(b, getLoc(), single(rg), inverse)});
}

Grads BroadcastOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // Sum over the new dimensions and over size-1 dimensions that were
  // repeated, then restore the input's shape.
  Emitter e{b, getLoc()};
  auto in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> dims = getDims();
  SmallVector<int64_t> reduce;
  for (int64_t r = 0; r < out.getRank(); ++r) {
    const auto *it = llvm::find(dims, r);
    if (it == dims.end() ||
        (in.getDimSize(it - dims.begin()) == 1 && out.getDimSize(r) != 1))
      reduce.push_back(r);
  }
  Value g = single(rg);
  if (!reduce.empty())
    g = e.reduceSum(g, reduce);
  return grads({e.reshape(g, in)});
}

Grads SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // Pad the gradient with zeros back to the input's shape, one dim at a time.
  Emitter e{b, getLoc()};
  auto in = getInput().getType();
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits();
  Value g = single(rg);
  for (int64_t d = 0; d < in.getRank(); ++d) {
    SmallVector<Value> parts;
    SmallVector<int64_t> shape(e.typeOf(g).getShape());
    auto zeros = [&](int64_t size) {
      shape[d] = size;
      return e.splat(RankedTensorType::get(shape, in.getElementType()), 0.0);
    };
    if (starts[d] > 0)
      parts.push_back(zeros(starts[d]));
    parts.push_back(g);
    if (limits[d] < in.getDimSize(d))
      parts.push_back(zeros(in.getDimSize(d) - limits[d]));
    if (parts.size() > 1)
      g = ConcatOp::create(b, getLoc(), parts, d);
  }
  return grads({g});
}

Grads ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  auto dim = static_cast<int64_t>(getDim());
  SmallVector<Value> result;
  int64_t offset = 0;
  auto shape = getResult().getType().getShape();
  for (Value input : getInputs()) {
    SmallVector<int64_t> starts(shape.size(), 0), limits(shape);
    int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(dim);
    starts[dim] = offset;
    limits[dim] = offset + size;
    result.push_back(SliceOp::create(b, getLoc(), single(rg), starts, limits));
    offset += size;
  }
  return result;
}

Grads CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  auto in = getInput().getType();
  if (!isWeftFloat(in.getElementType()))
    return grads({Value()});
  return grads({CastOp::create(b, getLoc(), in, single(rg))});
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// Broadcasts a reduction's result-shaped gradient back to its input shape.
Value expandReduced(Emitter &e, Value g, RankedTensorType input,
                    ArrayRef<int64_t> reduced) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (!llvm::is_contained(reduced, d))
      kept.push_back(d);
  return e.broadcast(g, input, kept);
}
} // namespace

Grads ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  return grads({expandReduced(e, single(rg), getInput().getType(), getDims())});
}

Grads ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Emitter e{b, getLoc()};
  int64_t count = 1;
  for (int64_t d : getDims())
    count *= getInput().getType().getDimSize(d);
  Value g = e.mul(single(rg), e.splatLike(single(rg), 1.0 / count));
  return grads({expandReduced(e, g, getInput().getType(), getDims())});
}

Grads ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // Every element equal to the maximum receives the gradient.
  Emitter e{b, getLoc()};
  auto in = getInput().getType();
  Value mask = GeOp::create(b, getLoc(), getInput(),
                            expandReduced(e, getResult(), in, getDims()));
  return grads({e.mul(expandReduced(e, single(rg), in, getDims()), mask)});
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

namespace {
/// A vocabulary-parallel op's gradient reads the same block of the
/// vocabulary (`weft.vocab_axes`, set by partitioning).
Value sameVocabBlock(Operation *forward, Value gradient) {
  if (Attribute axes = forward->getAttr(kVocabAxesAttr))
    gradient.getDefiningOp()->setAttr(kVocabAxesAttr, axes);
  return gradient;
}
} // namespace

Grads EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({sameVocabBlock(*this, EmbeddingGradOp::create(
                                          b, getLoc(), getTable().getType(),
                                          getIds(), single(rg))),
                Value()});
}

Grads LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  auto g = LayerNormGradOp::create(b, getLoc(), getInput(), getWeight(),
                                   single(rg), getEpsilonAttr());
  return grads({g.getInputGrad(), g.getWeightGrad(), g.getBiasGrad()});
}

Grads RMSNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  auto g = RMSNormGradOp::create(b, getLoc(), getInput(), getWeight(),
                                 single(rg), getEpsilonAttr());
  return grads({g.getInputGrad(), g.getWeightGrad()});
}

Grads SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // dx = z (g - sum(g z)) along the softmax dimension.
  Emitter e{b, getLoc()};
  auto dim = static_cast<int64_t>(getDim());
  Value z = getResult(), g = single(rg);
  Value dot = e.expandAlong(e.reduceSum(e.mul(g, z), {dim}), z, dim);
  return grads({e.mul(z, e.sub(g, dot))});
}

Grads RopeOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // A rotation's adjoint is the opposite rotation.
  return grads({RopeOp::create(b, getLoc(), single(rg), getPositions(),
                               getThetaAttr(), getPositionOffsetAttr(),
                               getInverse() ? UnitAttr() : b.getUnitAttr()),
                Value()});
}

Grads AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  if (!rg[0] && !rg[1])
    return grads(
        {Value(), Value(), Value(), Value(), Value(), Value(), Value()});
  // A log-sum-exp used on its own (ring attention's merge) still needs the
  // result's gradient operand: zero.
  Value grad = rg[0];
  if (!grad)
    grad = Emitter{b, getLoc()}.splatLike(getResult(), 0.0);
  // Dropout's mask is regenerated from the same seed, step and block.
  auto g = AttentionGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), getResult(), getLse(),
      grad, getQueryPositions(), getKeyPositions(), rg[1], getStep(),
      getMicrobatch(), getScaleAttr(), getCausalAttr(), getDropoutAttr(),
      getSeedAttr(), getSplitAttr(), getMicrobatchesAttr());
  return grads({g.getQueryGrad(), g.getKeyGrad(), g.getValueGrad(), Value(),
                Value(), Value(), Value()});
}

Grads DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // The mask is a pure function of (seed, index): the same op masks the
  // gradient identically.
  return grads(
      {DropoutOp::create(b, getLoc(), single(rg), getStep(), getMicrobatch(),
                         getPositions(), getRateAttr(), getSeedAttr(),
                         getSplitAttr(), getMicrobatchesAttr()),
       Value(), Value(), Value()});
}

Grads AttentionEntropyOp::buildGradients(OpBuilder &, ArrayRef<Value>) {
  // A probe's value, off the loss's path: nothing to differentiate.
  return grads({Value(), Value(), Value(), Value(), Value()});
}

Grads Fp8AmaxOp::buildGradients(OpBuilder &, ArrayRef<Value>) {
  return grads({Value()});
}

Grads Fp8QuantizeOp::buildGradients(OpBuilder &, ArrayRef<Value> rg) {
  // Straight-through: the backward GEMMs read the quantized operand itself.
  return grads({single(rg), Value()});
}

Value weft::delayedAmax(OpBuilder &b, Location loc, Value current,
                        Value history) {
  Emitter e{b, loc};
  Value fresh = GeOp::create(b, loc, e.splatLike(history, 0.0), history);
  return SelectOp::create(b, loc, fresh, current, history);
}

Grads Fp8QuantizeGradOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g = single(rg);
  auto type = cast<RankedTensorType>(g.getType());
  auto amaxOp = Fp8AmaxOp::create(
      b, getLoc(),
      RankedTensorType::get(fp8Grid(type.getShape(), getBlock()),
                            b.getF32Type()),
      g);
  if (auto name = (*this)->getAttrOfType<StringAttr>(kAmaxHistoryAttr))
    amaxOp->setAttr(kAmaxHistoryAttr, name);
  Value amax = amaxOp;
  // Blocks that span ranks (partitioning recorded which) take the maximum
  // over them.
  amax = maxOverRecordedAxes(b, getLoc(), amax, *this, kAmaxAxesAttr);
  if (getHistory())
    amax = delayedAmax(b, getLoc(), amax, getHistory());
  // The weight gradient's GEMM reads g quantized again along the tokens
  // (fp8ForBackward), with the maxima over the axes this op's backward
  // blocks span.
  auto q = Fp8QuantizeOp::create(b, getLoc(), g, amax, getFormatAttr(),
                                 getPow2ScalesAttr(), getBackwardBlockAttr(),
                                 getGroupRowsAttr());
  for (const char *name : {kBackwardAmaxAxesAttr, kAmaxMeshAttr})
    if (Attribute a = (*this)->getAttr(name))
      q->setAttr(name, a);
  return grads({q, Value()});
}

Grads CrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({sameVocabBlock(*this, CrossEntropyGradOp::create(
                                          b, getLoc(), getLogits(), getLabels(),
                                          single(rg), getIgnoreIndexAttr())),
                Value()});
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

namespace {
/// Scatters per-choice gradients [..., k] onto the positions `indices` name
/// in a [..., N] tensor: sum_j one_hot(indices[..., j]) * g[..., j].
Value scatterChoices(Emitter &e, Value g, Value indices,
                     RankedTensorType like) {
  auto gType = e.typeOf(g);
  SmallVector<int64_t> shape(gType.getShape());
  shape.push_back(like.getShape().back());
  auto wide = RankedTensorType::get(shape, like.getElementType());
  Value oneHot = OneHotOp::create(e.b, e.loc, wide, indices);
  SmallVector<int64_t> dims(gType.getRank());
  std::iota(dims.begin(), dims.end(), 0);
  return e.reduceSum(e.mul(oneHot, e.broadcast(g, wide, dims)),
                     {gType.getRank() - 1});
}
} // namespace

Grads TopKOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  if (!rg[0])
    return grads({Value()});
  Emitter e{b, getLoc()};
  return grads({scatterChoices(e, rg[0], getIndices(), getInput().getType())});
}

Grads TopKGatingOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  if (!rg[0])
    return grads({Value()});
  Emitter e{b, getLoc()};
  Value g = rg[0], w = getWeights();
  Value p = e.softmax(getLogits(), 1);
  if (getNormalize()) {
    // w = u / S with u the selected probabilities and S their sum:
    // du = (g - sum_j g_j w_j) / S.
    Value u = e.reduceSum(
        e.mul(OneHotOp::create(
                  b, getLoc(),
                  RankedTensorType::get({e.typeOf(w).getDimSize(0),
                                         e.typeOf(w).getDimSize(1),
                                         e.typeOf(p).getDimSize(1)},
                                        e.typeOf(p).getElementType()),
                  getIndices()),
              e.broadcast(p,
                          RankedTensorType::get({e.typeOf(w).getDimSize(0),
                                                 e.typeOf(w).getDimSize(1),
                                                 e.typeOf(p).getDimSize(1)},
                                                e.typeOf(p).getElementType()),
                          {0, 2})),
        {2});
    Value sum = e.expandAlong(e.reduceSum(u, {1}), w, 1);
    Value gw = e.expandAlong(e.reduceSum(e.mul(g, w), {1}), w, 1);
    g = e.div(e.sub(g, gw), sum);
  }
  // dp scattered to the chosen experts, then through the softmax.
  Value dp = scatterChoices(e, g, getIndices(), e.typeOf(p));
  Value dot = e.expandAlong(e.reduceSum(e.mul(dp, p), {1}), p, 1);
  return grads({e.mul(p, e.sub(dp, dot))});
}

Grads ExpertDispatchOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // Dispatch copies token t to each of its kept pairs' rows.
  Emitter e{b, getLoc()};
  Value pairs = ExpertGatherOp::create(b, getLoc(), single(rg), getPositions());
  return grads({e.reduceSum(pairs, {1}), Value()});
}

Grads ExpertCombineOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // y[t] = sum_j w[t, j] g[t, j] with g = gather(expert_outputs).
  Emitter e{b, getLoc()};
  Value dy = single(rg);
  Value gathered =
      ExpertGatherOp::create(b, getLoc(), getExpertOutputs(), getPositions());
  auto pairType = e.typeOf(gathered);
  Value dyPairs = e.broadcast(dy, pairType, {0, 2});
  Value dPairs = e.mul(dyPairs, e.broadcast(getWeights(), pairType, {0, 1}));
  Value dExperts =
      ExpertScatterOp::create(b, getLoc(), dPairs, getPositions(),
                              getExpertOutputs().getType().getDimSize(0));
  Value dWeights = e.reduceSum(e.mul(gathered, dyPairs), {2});
  return grads({dExperts, dWeights, Value()});
}

Grads ExpertGatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads(
      {ExpertScatterOp::create(b, getLoc(), single(rg), getPositions(),
                               getExpertOutputs().getType().getDimSize(0)),
       Value()});
}

Grads ExpertScatterOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  return grads({ExpertGatherOp::create(b, getLoc(), single(rg), getPositions()),
                Value()});
}

Grads GroupedMatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // y_g = x_g W_e (or x_g W_e^T): dx_g = dy_g W_e^T (dy_g W_e), and
  // dW_e sums x_g^T dy_g (dy_g^T x_g) over e's groups.
  // An FP8 weight whose blocks are one element thick along what dx
  // contracts (M) is quantized again for it (fp8ForBackward); FP8 rows
  // are quantized again in tiles of each expert's for dW (fp8ForGroups).
  Value dy = single(rg), x = getInput(), w = getWeight(), sizes = getSizes();
  bool t = getTransposeRhs();
  Value dx = GroupedMatmulOp::create(
      b, getLoc(), dy, fp8ForBackward(b, getLoc(), w, {t ? 1 : 2}), sizes, !t);
  int64_t experts = getWeight().getType().getDimSize(0);
  Value gy = fp8ForGroups(b, getLoc(), dy, sizes, experts),
        gx = fp8ForGroups(b, getLoc(), x, sizes, experts);
  Value dw =
      t ? GroupedMatmulWgradOp::create(b, getLoc(), gy, gx, sizes, experts)
        : GroupedMatmulWgradOp::create(b, getLoc(), gx, gy, sizes, experts);
  return grads({dx, dw, Value()});
}

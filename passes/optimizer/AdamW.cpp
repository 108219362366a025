//===- AdamW.cpp - AdamW with global-norm clipping as weft ops ------------===//
//
// The optimizer is part of the compiled step, not of the runtime: fusion then
// turns each parameter's update into one elementwise kernel, sharding passes
// split the moments and the update (ZeRO-1/2, weft-partition-optimizer: this
// pass writes the update of whole tensors and knows no placement), and the
// reference evaluator runs exactly what a backend runs.
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"
#include "passes/health/Passes.h"
#include "passes/pipeline/Names.h"
#include "passes/recompute/Layers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <map>

namespace weft {
#define GEN_PASS_DEF_ADAMW
#include "passes/optimizer/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

/// Records on the op defining `grad` that its result is the gradient of
/// parameter `name` (kGradOfAttr), for the passes that place the update.
static void tagGradient(Value grad, StringAttr name) {
  auto result = dyn_cast<OpResult>(grad);
  if (!result)
    return;
  Operation *op = result.getOwner();
  SmallVector<Attribute> tags(op->getNumResults(),
                              StringAttr::get(op->getContext(), ""));
  if (auto old = op->getAttrOfType<ArrayAttr>(kGradOfAttr))
    llvm::copy(old, tags.begin());
  tags[result.getResultNumber()] = name;
  op->setAttr(kGradOfAttr, ArrayAttr::get(op->getContext(), tags));
}

namespace {
/// A parameter's update: its gradient and the mesh axes that split it.
struct Update {
  ParamOp param;
  Value grad;
  ArrayAttr gradAxes; // Mesh axes the gradient (and parameter) are split
                      // over.
};

/// Writes each layer's gradient norm, from the parameters' sums of squares
/// `squares` (one per update), into its health probe. A layer's split
/// gradients leave partial sums: per set of axes (and pipeline stage),
/// every layer's partial sum is all-reduced at once as a vector. A layer
/// lives on one stage, so nothing is summed over pp: the norm and its
/// probe stay on the layer's stage.
void writeLayerGradNorms(func::FuncOp step, weft::detail::Emitter &e,
                         ArrayRef<Update> updates, ArrayRef<Value> squares,
                         StringRef mesh) {
  auto scalar = RankedTensorType::get({}, e.b.getF32Type());
  std::map<int64_t, Value> total;
  std::map<int64_t, Attribute> stageOf;
  llvm::MapVector<std::pair<Attribute, Attribute>, std::map<int64_t, Value>>
      partial;
  auto add = [&](Value &sum, Value sq) { sum = sum ? e.add(sum, sq) : sq; };
  for (auto [u, sq] : llvm::zip(updates, squares)) {
    auto layer = u.param->getAttrOfType<IntegerAttr>(kLayerAttr);
    if (!layer)
      continue;
    Attribute stage = u.param->getAttr(kStageAttr);
    stageOf[layer.getInt()] = stage;
    SmallVector<Attribute> axes;
    for (Attribute a : u.gradAxes)
      if (cast<StringAttr>(a).getValue() != kPipelineAxis)
        axes.push_back(a);
    add(axes.empty() ? total[layer.getInt()]
                     : partial[{e.b.getArrayAttr(axes), stage}][layer.getInt()],
        sq);
  }
  auto one = RankedTensorType::get({1}, e.b.getF32Type());
  for (auto &[key, sums] : partial) {
    Attribute axes = key.first;
    SmallVector<Value> parts;
    for (auto &[l, sum] : sums)
      parts.push_back(e.reshape(sum, one));
    Value vector =
        parts.size() == 1
            ? parts.front()
            : ConcatOp::create(e.b, e.loc, parts, e.b.getI64IntegerAttr(0))
                  .getResult();
    Value reduced =
        AllReduceOp::create(
            e.b, e.loc, ReduceKindAttr::get(e.b.getContext(), ReduceKind::Sum),
            ValueRange{vector}, FlatSymbolRefAttr::get(e.b.getContext(), mesh),
            cast<ArrayAttr>(axes))
            .getResult(0);
    int64_t i = 0;
    for (auto &[l, sum] : sums) {
      Value part = SliceOp::create(e.b, e.loc, reduced, ArrayRef<int64_t>{i},
                                   ArrayRef<int64_t>{i + 1});
      add(total[l], e.reshape(part, scalar));
      ++i;
    }
  }
  for (auto &[l, sum] : total) {
    ParamOp probe =
        declareProbe(step, layerName(step, l) + "/grad_norm", scalar, "last");
    if (Attribute stage = stageOf[l])
      probe->setAttr(kStageAttr, stage);
    AssignOp::create(e.b, e.loc, probe.getNameAttr(),
                     SqrtOp::create(e.b, e.loc, sum));
  }
}
} // namespace

FailureOr<func::FuncOp> weft::buildAdamWStep(func::FuncOp grad, StringRef name,
                                             const AdamWConfig &config) {
  if (SymbolTable::lookupNearestSymbolFrom(
          grad, StringAttr::get(grad.getContext(), name)))
    return grad.emitError("weft-optimizer-adamw: a symbol named @")
           << name << " already exists";
  if (grad.getNumResults() < 1 ||
      grad.getResultAttrOfType<StringAttr>(0, "weft.output") !=
          StringAttr::get(grad.getContext(), "loss"))
    return grad.emitError("weft-optimizer-adamw: @")
           << grad.getSymName()
           << " is not a gradient function (run weft-autodiff first)";

  // Check every result before cloning, so errors point at the input IR.
  {
    llvm::StringMap<ParamOp> params;
    for (auto p : grad.getBody().front().getOps<ParamOp>())
      params[p.getName()] = p;
    for (unsigned r = 1; r < grad.getNumResults(); ++r) {
      auto tag = grad.getResultAttrOfType<StringAttr>(r, "weft.grad");
      ParamOp param = tag ? params.lookup(tag.getValue()) : ParamOp();
      if (!param)
        return grad.emitError("weft-optimizer-adamw: result ")
               << r << " of @" << grad.getSymName()
               << " is not the gradient of a parameter";
      if (!param.getType().getElementType().isF32())
        return param.emitError("weft-optimizer-adamw: only f32 parameters are "
                               "supported yet, got ")
               << param.getType();
    }
  }

  OpBuilder builder(grad);
  builder.setInsertionPointAfter(grad);
  auto step = cast<func::FuncOp>(builder.clone(*grad));
  step.setSymName(name);
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The update's ops are the optimizer's, not the layer the loss came
  // from: named so, for the runtime's messages (the bundle's "layer").
  Location loc = NameLoc::get(builder.getStringAttr("optimizer"), ret.getLoc());
  auto scalarType = RankedTensorType::get({}, builder.getF32Type());
  SmallVector<DictionaryAttr> argAttrs;
  step.getAllArgAttrs(argAttrs);
  Value lr = body.addArgument(scalarType, loc);
  Value stepNumber = body.addArgument(scalarType, loc);

  // Map gradient results to their parameters.
  llvm::StringMap<ParamOp> params;
  Operation *lastParam = nullptr;
  for (auto p : body.getOps<ParamOp>()) {
    params[p.getName()] = p;
    lastParam = p;
  }
  SmallVector<Update> updates;
  for (unsigned r = 1; r < step.getNumResults(); ++r) {
    auto tag = step.getResultAttrOfType<StringAttr>(r, "weft.grad");
    ParamOp param = params.lookup(tag.getValue());
    Update u{param, ret.getOperand(r), {}};
    tagGradient(u.grad, tag);
    SmallVector<Attribute> axes;
    if (auto sharding = param->getAttrOfType<ShardingAttr>(weft::kShardOfAttr))
      for (Attribute dim : sharding.getDims())
        llvm::append_range(axes, cast<ArrayAttr>(dim));
    // A pipeline stage's parameters are on its ranks alone: their squares
    // sum over pp as well.
    if (param->hasAttr(kStageAttr))
      axes.push_back(builder.getStringAttr(kPipelineAxis));
    u.gradAxes = builder.getArrayAttr(axes);
    updates.push_back(u);
  }

  builder.setInsertionPoint(ret);
  weft::detail::Emitter e{builder, loc};
  auto scalar = [&](double v) { return e.splat(scalarType, v); };
  auto expand = [&](Value s, Type like) {
    return e.broadcast(s, cast<RankedTensorType>(like), {});
  };
  // A scalar state parameter of the step (counters of loss scaling).
  auto stateScalar = [&](StringRef pname, InitKind init) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfter(lastParam);
    auto op =
        ParamOp::create(builder, loc, scalarType, builder.getStringAttr(pname),
                        InitKindAttr::get(builder.getContext(), init),
                        FloatAttr(), builder.getUnitAttr());
    lastParam = op;
    return op;
  };
  auto select = [&](Value c, Value a, Value b) {
    return SelectOp::create(builder, loc, a.getType(), c, a, b).getResult();
  };

  // Dynamic loss scaling (weft-autodiff's loss-scale): the gradients are
  // the loss scale S times the true ones; unscaled here, before the norm.
  ParamOp lossScale;
  for (ParamOp p : body.getOps<ParamOp>())
    if (p.getName() == kLossScaleParam && p->hasAttr(kLossScaleAttr))
      lossScale = p;
  Value scaleUsed;
  double initial = 0;
  if (lossScale) {
    initial =
        lossScale->getAttrOfType<FloatAttr>(kLossScaleAttr).getValueAsDouble();
    scaleUsed = e.mul(lossScale.getResult(), scalar(initial));
    Value inverse = e.div(scalar(1.0), scaleUsed);
    for (Update &u : updates)
      u.grad = e.mul(u.grad, expand(inverse, u.grad.getType()));
  }

  // Dropout draws a fresh mask each step: the model's step counter moves on
  // with every optimizer step, skipped (overflowed) ones too, as PyTorch's
  // generator does.
  for (ParamOp p : body.getOps<ParamOp>())
    if (p.getName() == kDropoutStepParam && p.getState()) {
      AssignOp::create(builder, loc, p.getName(),
                       e.add(p.getResult(), scalar(1.0)));
      break;
    }

  // Global gradient norm and the clip factor min(1, max_norm / (n + 1e-6)).
  // A parameter split over mesh axes (`weft.shard_of`) has its gradient split
  // the same way: its squares sum to a partial result, all-reduced over
  // those axes (once per distinct set of axes).
  Value sumSq;
  llvm::MapVector<Attribute, Value> partialSums;
  SmallVector<Value> squares;
  for (const Update &u : updates) {
    Value sq =
        e.reduceSum(SquareOp::create(builder, loc, u.grad), e.allDims(u.grad));
    squares.push_back(sq);
    if (u.gradAxes.empty()) {
      sumSq = sumSq ? e.add(sumSq, sq) : sq;
      continue;
    }
    Value &partial = partialSums[u.gradAxes];
    partial = partial ? e.add(partial, sq) : sq;
  }
  for (auto &[axes, partial] : partialSums) {
    auto sum = ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum);
    Value total = AllReduceOp::create(
                      builder, loc, sum, ValueRange{partial},
                      FlatSymbolRefAttr::get(builder.getContext(), config.mesh),
                      cast<ArrayAttr>(axes))
                      .getResult(0);
    sumSq = sumSq ? e.add(sumSq, total) : total;
  }
  Value norm =
      sumSq ? SqrtOp::create(builder, loc, sumSq).getResult() : scalar(0.0);
  if (config.layerGradNorms)
    writeLayerGradNorms(step, e, updates, squares, config.mesh);
  // With loss scaling, a step whose gradients overflowed (an infinite or
  // NaN norm, the same on every rank: the norm is all-reduced) changes no
  // parameter or moment and does not count for Adam's bias correction.
  Value ok;
  if (lossScale) {
    ok = GeOp::create(builder, loc, scalar(3.4028234663852886e38), norm);
    ParamOp counted = stateScalar(kOptimizerStepParam, InitKind::Zeros);
    stepNumber = e.add(counted.getResult(), ok);
    AssignOp::create(builder, loc, counted.getName(), stepNumber);
  }
  Value clip;
  if (config.maxGradNorm > 0)
    clip = e.div(scalar(config.maxGradNorm),
                 MaxOp::create(builder, loc, e.add(norm, scalar(1e-6)),
                               scalar(config.maxGradNorm)));

  // Bias corrections 1 - beta^step = 1 - exp(step ln beta).
  auto correction = [&](double beta) {
    Value power =
        ExpOp::create(builder, loc, e.mul(stepNumber, scalar(std::log(beta))));
    return e.sub(scalar(1.0), power);
  };
  Value bc1 = correction(config.beta1), bc2 = correction(config.beta2);
  // Decoupled weight decay's factor 1 - lr wd, once for every matrix (and
  // before the updates, so each parameter's update fuses into one kernel).
  Value keep = config.weightDecay > 0
                   ? e.sub(scalar(1.0), e.mul(lr, scalar(config.weightDecay)))
                   : Value();

  for (Update &u : updates) {
    Type type = u.param.getType();
    std::string pname = u.param.getName().str();
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfter(lastParam);
    auto moment = [&](StringRef suffix) {
      auto op = ParamOp::create(
          builder, u.param.getLoc(), type,
          builder.getStringAttr(pname + suffix.str()),
          InitKindAttr::get(builder.getContext(), InitKind::Zeros), FloatAttr(),
          builder.getUnitAttr());
      // Held as the parameter is: its block of the global tensor (which a
      // checkpoint records, so another plan can load it), its stage, and
      // the rows a checkpoint keeps of a padded one.
      for (const char *attr : {kStageAttr, kShardOfAttr, kCheckpointRowsAttr})
        if (Attribute a = u.param->getAttr(attr))
          op->setAttr(attr, a);
      lastParam = op;
      return op.getResult();
    };
    Value m = moment(".exp_avg"), v = moment(".exp_avg_sq");
    builder.setInsertionPoint(ret);
    Value g = clip ? e.mul(u.grad, expand(clip, type)) : u.grad;
    Value m2 = e.add(
        e.mul(m, e.splat(cast<RankedTensorType>(type), config.beta1)),
        e.mul(g, e.splat(cast<RankedTensorType>(type), 1 - config.beta1)));
    Value v2 =
        e.add(e.mul(v, e.splat(cast<RankedTensorType>(type), config.beta2)),
              e.mul(SquareOp::create(builder, loc, g),
                    e.splat(cast<RankedTensorType>(type), 1 - config.beta2)));
    Value mhat = e.div(m2, expand(bc1, type));
    Value denom =
        e.add(SqrtOp::create(builder, loc, e.div(v2, expand(bc2, type))),
              e.splat(cast<RankedTensorType>(type), config.eps));
    Value p = u.param.getResult();
    // A matrix as the checkpoint holds it: a parameter held in another
    // shape (GPT-2's c_attn bias [3d] as [3, d]) decays as stored.
    int64_t rank = cast<RankedTensorType>(type).getRank();
    if (auto held =
            u.param->getAttrOfType<DenseI64ArrayAttr>(kCheckpointShapeAttr))
      rank = static_cast<int64_t>(held.size());
    bool decay = rank >= 2 && config.weightDecay > 0;
    if (decay)
      p = e.mul(p, expand(keep, type));
    Value updated = e.sub(p, e.mul(expand(lr, type), e.div(mhat, denom)));
    if (ok) {
      Value keepIt = expand(ok, type);
      updated = select(keepIt, updated, u.param.getResult());
      m2 = select(keepIt, m2, m);
      v2 = select(keepIt, v2, v);
    }
    AssignOp::create(builder, loc, u.param.getName(), updated);
    AssignOp::create(builder, loc, builder.getStringAttr(pname + ".exp_avg"),
                     m2);
    AssignOp::create(builder, loc, builder.getStringAttr(pname + ".exp_avg_sq"),
                     v2);
  }

  SmallVector<Value> results = {ret.getOperand(0), norm};
  SmallVector<StringRef> names = {"loss", "grad_norm"};
  if (lossScale) {
    // The scale halves after an overflow and doubles after `window` clean
    // steps in a row (PyTorch's GradScaler, Megatron's DynamicGradScaler).
    int64_t window =
        lossScale->getAttrOfType<IntegerAttr>(kLossScaleWindowAttr).getInt();
    ParamOp good = stateScalar(kLossScaleGoodStepsParam, InitKind::Zeros);
    Value s = lossScale.getResult();
    Value counted =
        select(ok, e.add(good.getResult(), scalar(1.0)), scalar(0.0));
    Value grow = GeOp::create(builder, loc, counted,
                              scalar(static_cast<double>(window)));
    // The scale stays at least 1 (Megatron's min_loss_scale): below, an
    // overflow is not the scale's doing.
    Value next =
        MaxOp::create(builder, loc,
                      select(ok, select(grow, e.mul(s, scalar(2.0)), s),
                             e.mul(s, scalar(0.5))),
                      scalar(std::min(1.0, 1.0 / initial)));
    AssignOp::create(builder, loc, lossScale.getName(), next);
    AssignOp::create(builder, loc, good.getName(),
                     select(grow, scalar(0.0), counted));
    results.push_back(scaleUsed);
    results.push_back(e.sub(scalar(1.0), ok));
    names.push_back("loss_scale");
    names.push_back("skipped");
  }
  func::ReturnOp::create(builder, loc, results);
  ret.erase();
  step.setFunctionType(builder.getFunctionType(
      body.getArgumentTypes(), SmallVector<Type>(results.size(), scalarType)));
  step.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  for (auto [i, n] : llvm::enumerate(names))
    step.setResultAttr(i, "weft.output", builder.getStringAttr(n));
  for (StringRef input : {"lr", "step"})
    argAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr("weft.input", builder.getStringAttr(input))));
  step.setAllArgAttrs(argAttrs);
  return step;
}

namespace {
struct AdamWPass : weft::impl::AdamWBase<AdamWPass> {
  using AdamWBase::AdamWBase;

  void runOnOperation() override {
    auto grad = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!grad) {
      getOperation().emitError("weft-optimizer-adamw: no function named @")
          << func;
      return signalPassFailure();
    }
    weft::AdamWConfig config{beta1, beta2, eps, weightDecay, maxGradNorm};
    config.layerGradNorms = layerGradNorms;
    if (failed(weft::buildAdamWStep(grad, out, config)))
      return signalPassFailure();
    if (!keepFunc)
      grad.erase();
  }
};
} // namespace

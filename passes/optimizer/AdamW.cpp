//===- AdamW.cpp - AdamW with global-norm clipping as weft ops ------------===//
//
// The optimizer is part of the compiled step, not of the runtime: fusion then
// turns each parameter's update into one elementwise kernel, sharding passes
// shard the moments with the parameters (ZeRO), and the reference evaluator
// runs exactly what a backend runs.
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>

namespace weft {
#define GEN_PASS_DEF_ADAMW
#include "passes/optimizer/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

/// A parameter's optimizer split (`weft.optimizer_shard`): the dimension
/// it splits, the mesh axes along it and how many ranks they span.
namespace {
struct OptimizerSplit {
  ShardingAttr sharding;
  int64_t dim = -1;
  ArrayAttr axes;
  int64_t ranks = 1;
};
} // namespace

/// Reads `param`'s optimizer split; an error naming the attribute if it is
/// not one split dimension over axes of the mesh it names.
static FailureOr<std::optional<OptimizerSplit>> readSplit(ParamOp param) {
  auto sharding = param->getAttrOfType<ShardingAttr>(kOptimizerShardAttr);
  if (!sharding)
    return std::optional<OptimizerSplit>();
  OptimizerSplit split;
  split.sharding = sharding;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(param, sharding.getMesh());
  for (auto [d, dim] : llvm::enumerate(sharding.getDims())) {
    auto axes = cast<ArrayAttr>(dim);
    if (axes.empty())
      continue;
    if (split.dim >= 0)
      return param.emitError("weft-optimizer-adamw: ")
             << kOptimizerShardAttr << " splits more than one dimension";
    split.dim = static_cast<int64_t>(d);
    split.axes = axes;
    for (StringRef axis : axes.getAsValueRange<StringAttr>()) {
      int64_t size = mesh ? mesh.axisSize(axis) : 0;
      if (size < 1)
        return param.emitError("weft-optimizer-adamw: ")
               << kOptimizerShardAttr << " splits over mesh axis '" << axis
               << "', which @" << sharding.getMesh().getValue() << " lacks";
      split.ranks *= size;
    }
  }
  if (split.dim < 0)
    return std::optional<OptimizerSplit>();
  return std::optional<OptimizerSplit>(split);
}

/// ZeRO-1/2: points `grad` and `value` at this rank's block of a replicated
/// parameter (its optimizer split; a dimension the split does not divide
/// here leaves it whole). With the gradient split too (ZeRO-2) its
/// all-reduce becomes a reduce-scatter; else the all-reduced gradient is
/// sliced.
static void shardUpdate(OpBuilder &builder, Value &grad, Value &value,
                        ArrayAttr &gradAxes, int64_t &gatherDim,
                        const OptimizerSplit &split, bool splitGradient,
                        SmallVectorImpl<Operation *> &replaced) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t dim = split.dim;
  if (dim >= type.getRank() || type.getDimSize(dim) % split.ranks != 0)
    return;
  FlatSymbolRefAttr mesh = split.sharding.getMesh();
  ArrayAttr axes = split.axes;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= split.ranks;
  auto blockType = RankedTensorType::get(shape, type.getElementType());
  // Mixed precision reduces the compute-precision gradient and casts it to
  // the master's f32: slicing commutes with the cast, so scatter before it.
  auto castOp = grad.getDefiningOp<CastOp>();
  Value reduced = castOp ? castOp.getInput() : grad;
  auto reduction = reduced.getDefiningOp<AllReduceOp>();
  if (splitGradient && reduction && reduction.getInputs().size() == 1 &&
      reduction.getAxes() == axes &&
      reduction.getReduction() == ReduceKind::Sum) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(reduction);
    auto reducedType = cast<RankedTensorType>(reduced.getType());
    grad = ReduceScatterOp::create(
        builder, reduction.getLoc(),
        RankedTensorType::get(shape, reducedType.getElementType()),
        reduction.getInputs()[0], mesh, axes, builder.getI64IntegerAttr(dim));
    if (castOp)
      grad = CastOp::create(builder, castOp.getLoc(), blockType, grad);
    replaced.push_back(reduction);
    if (castOp)
      replaced.push_back(castOp);
  } else {
    grad = ShardSliceOp::create(builder, grad.getLoc(), blockType, grad, mesh,
                                axes, builder.getI64IntegerAttr(dim));
  }
  value = ShardSliceOp::create(builder, value.getLoc(), blockType, value, mesh,
                               axes, builder.getI64IntegerAttr(dim));
  gradAxes = axes;
  gatherDim = dim;
}

/// ZeRO-1 with master weights stored split (see weft-apply-plan): their
/// gradients arrive reduce-scattered through the gather's gradient; without
/// a split gradient the whole one is all-reduced and the block taken.
static void keepWholeGradient(OpBuilder &builder, Value grad,
                              const OptimizerSplit &split) {
  auto castOp = grad.getDefiningOp<CastOp>();
  auto scatter =
      (castOp ? castOp.getInput() : grad).getDefiningOp<ReduceScatterOp>();
  if (!scatter || scatter.getAxes() != split.axes)
    return;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(scatter);
  auto sum = ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum);
  Value whole =
      AllReduceOp::create(builder, scatter.getLoc(), sum,
                          ValueRange{scatter.getInput()}, scatter.getMeshAttr(),
                          scatter.getAxesAttr())
          .getResult(0);
  Value block = ShardSliceOp::create(
      builder, scatter.getLoc(), scatter.getType(), whole,
      scatter.getMeshAttr(), scatter.getAxesAttr(), scatter.getDimAttr());
  scatter.getResult().replaceAllUsesWith(block);
  scatter.erase();
}

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
      if (failed(readSplit(param)))
        return failure();
    }
  }

  OpBuilder builder(grad);
  builder.setInsertionPointAfter(grad);
  auto step = cast<func::FuncOp>(builder.clone(*grad));
  step.setSymName(name);
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Location loc = ret.getLoc();
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
  struct Update {
    ParamOp param;
    Value grad;
    Value value;        // What the update reads: the parameter, or its block.
    ArrayAttr gradAxes; // Mesh axes the gradient (and value) are split over.
    int64_t gatherDim = -1; // ZeRO-1/2: all-gather the new block along it,
    FlatSymbolRefAttr gatherMesh; // over these axes of this mesh.
    ArrayAttr gatherAxes;
  };
  SmallVector<Update> updates;
  for (unsigned r = 1; r < step.getNumResults(); ++r) {
    auto tag = step.getResultAttrOfType<StringAttr>(r, "weft.grad");
    ParamOp param = params.lookup(tag.getValue());
    Update u{param, ret.getOperand(r), param.getResult(), {}, -1, {}, {}};
    SmallVector<Attribute> axes;
    if (auto sharding = param->getAttrOfType<ShardingAttr>(weft::kShardOfAttr))
      for (Attribute dim : sharding.getDims())
        llvm::append_range(axes, cast<ArrayAttr>(dim));
    u.gradAxes = builder.getArrayAttr(axes);
    updates.push_back(u);
  }

  builder.setInsertionPoint(ret);
  detail::Emitter e{builder, loc};
  SmallVector<Operation *> replacedReductions;
  for (Update &u : updates) {
    // The plan's optimizer split (weft-apply-plan, ZeRO-1/2), checked above.
    std::optional<OptimizerSplit> split = *readSplit(u.param);
    bool splitGradient = u.param->hasAttr(kGradShardAttr);
    if (split && u.gradAxes.empty()) {
      shardUpdate(builder, u.grad, u.value, u.gradAxes, u.gatherDim, *split,
                  splitGradient, replacedReductions);
      u.gatherMesh = split->sharding.getMesh();
      u.gatherAxes = split->axes;
    } else if (split && !splitGradient) {
      keepWholeGradient(builder, u.grad, *split);
    }
    // What this rank keeps of the gradient: its block where it arrives
    // reduce-scattered, else the whole (local) gradient. The memory report
    // reads it from the parameter.
    Value arrived = u.grad;
    if (auto castOp = arrived.getDefiningOp<CastOp>())
      arrived = castOp.getInput();
    if (auto slice = arrived.getDefiningOp<ShardSliceOp>())
      arrived = slice.getInput();
    int64_t elements =
        cast<RankedTensorType>(arrived.getType()).getNumElements();
    u.param->setAttr(weft::kGradElementsAttr,
                     builder.getI64IntegerAttr(elements));
  }
  auto scalar = [&](double v) { return e.splat(scalarType, v); };
  auto expand = [&](Value s, Type like) {
    return e.broadcast(s, cast<RankedTensorType>(like), {});
  };

  // Global gradient norm and the clip factor min(1, max_norm / (n + 1e-6)).
  // A parameter split over mesh axes (`weft.shard_of`) has its gradient split
  // the same way: its squares sum to a partial result, all-reduced over
  // those axes (once per distinct set of axes).
  Value sumSq;
  llvm::MapVector<Attribute, Value> partialSums;
  for (const Update &u : updates) {
    Value sq =
        e.reduceSum(SquareOp::create(builder, loc, u.grad), e.allDims(u.grad));
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
    Type type = u.value.getType();
    std::string pname = u.param.getName().str();
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfter(lastParam);
    auto moment = [&](StringRef suffix) {
      auto op = ParamOp::create(
          builder, u.param.getLoc(), type,
          builder.getStringAttr(pname + suffix.str()),
          InitKindAttr::get(builder.getContext(), InitKind::Zeros), FloatAttr(),
          builder.getUnitAttr());
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
    Value p = u.value;
    bool decay =
        cast<RankedTensorType>(type).getRank() >= 2 && config.weightDecay > 0;
    if (decay)
      p = e.mul(p, expand(keep, type));
    Value updated = e.sub(p, e.mul(expand(lr, type), e.div(mhat, denom)));
    if (u.gatherDim >= 0)
      updated = AllGatherOp::create(builder, loc, u.param.getType(), updated,
                                    u.gatherMesh, u.gatherAxes,
                                    builder.getI64IntegerAttr(u.gatherDim));
    AssignOp::create(builder, loc, u.param.getName(), updated);
    AssignOp::create(builder, loc, builder.getStringAttr(pname + ".exp_avg"),
                     m2);
    AssignOp::create(builder, loc, builder.getStringAttr(pname + ".exp_avg_sq"),
                     v2);
  }

  Value loss = ret.getOperand(0);
  func::ReturnOp::create(builder, loc, ValueRange{loss, norm});
  ret.erase();
  // All-reduces that ZeRO-2 replaced by reduce-scatters fed only the
  // gradient results (through a cast, in mixed precision): drop them, or
  // they would still run. Casts come after their all-reduce in the list.
  for (Operation *op : llvm::reverse(replacedReductions))
    if (op->use_empty())
      op->erase();
  step.setFunctionType(builder.getFunctionType(body.getArgumentTypes(),
                                               {scalarType, scalarType}));
  step.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  step.setResultAttr(0, "weft.output", builder.getStringAttr("loss"));
  step.setResultAttr(1, "weft.output", builder.getStringAttr("grad_norm"));
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
    if (failed(weft::buildAdamWStep(grad, out, config)))
      return signalPassFailure();
    if (!keepFunc)
      grad.erase();
  }
};
} // namespace

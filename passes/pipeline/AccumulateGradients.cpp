//===- AccumulateGradients.cpp - a step as micro-batches, then one update -===//

#include "passes/pipeline/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

namespace weft {
#define GEN_PASS_DEF_ACCUMULATEGRADIENTS
#include "passes/pipeline/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// A state parameter `name` of `type`, zeros at first, stored as `like` is
/// (the parameter whose gradient it holds; none for the loss).
ParamOp declareAccumulator(OpBuilder &b, Location loc, Type type,
                           StringRef name, ParamOp like) {
  auto acc = ParamOp::create(b, loc, type, b.getStringAttr(name),
                             InitKindAttr::get(b.getContext(), InitKind::Zeros),
                             FloatAttr(), b.getUnitAttr());
  // The step that reads it zeroes it (below): nothing to checkpoint.
  acc->setAttr(kTransientAttr, b.getUnitAttr());
  // Only where the parameter's storage lies (its block of the global
  // tensor, on its pipeline stage); its optimizer's and gradient's splits
  // are its own.
  if (like)
    for (const char *attr : {kShardOfAttr, kStageAttr})
      if (Attribute a = like->getAttr(attr))
        acc->setAttr(attr, a);
  return acc;
}

/// The all-reduce that makes gradient `g` of `param`, if the accumulator
/// can take its input instead and the step reduce once: a sum of one
/// tensor that only the return reads, or that only a widening cast to the
/// gradient's type reads (a bf16 model's gradient, reduced in bf16 and
/// widened for its f32 master: the accumulator then adds the widened
/// local gradient, and the one reduction is of the f32 sum, as Megatron
/// reduces its f32 main_grad once). `widen` is set to that cast.
/// ZeRO-2's (weft.grad_shard) stays, as weft-partition-optimizer makes it
/// the per-micro-batch reduce-scatter into its block accumulator.
AllReduceOp deferrableReduction(Value g, ParamOp param, CastOp &widen) {
  widen = g.getDefiningOp<CastOp>();
  if (widen) {
    auto from = dyn_cast<FloatType>(getElementTypeOrSelf(widen.getInput()));
    auto to = dyn_cast<FloatType>(getElementTypeOrSelf(widen.getType()));
    if (!from || !to || from.getWidth() >= to.getWidth())
      return AllReduceOp();
  }
  Value reduced = widen ? widen.getInput() : g;
  auto sum = reduced.getDefiningOp<AllReduceOp>();
  if (!sum || param->hasAttr(kGradShardAttr) || !g.hasOneUse() ||
      !reduced.hasOneUse() || sum.getInputs().size() != 1 ||
      sum.getReduction() != ReduceKind::Sum ||
      !isa<func::ReturnOp>(*g.getUsers().begin()))
    return AllReduceOp();
  return sum;
}

/// Dropout in @accumulate draws micro-batch k's block of the step's mask
/// (the state parameter dropout_microbatch is k): without it every
/// micro-batch would draw the same mask. @accumulate counts k up; the step
/// resets it. The micro-batches cut the batch, which every activation a
/// model drops has as its dimension 0 ([B, S, D], [B * S, D]; attention's
/// query [B, S, H, D]): the k-th of M blocks of it.
void countMicrobatches(func::FuncOp accumulate, int64_t microbatches) {
  Block &body = accumulate.getBody().front();
  SmallVector<Operation *> dropouts;
  accumulate.walk([&](Operation *op) {
    if (isa<DropoutOp>(op) ||
        (isa<AttentionOp, AttentionGradOp>(op) && op->hasAttr("dropout")))
      dropouts.push_back(op);
  });
  if (dropouts.empty())
    return;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = accumulate.getLoc();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto counter =
      ParamOp::create(b, loc, scalar, b.getStringAttr(kDropoutMicrobatchParam),
                      InitKindAttr::get(b.getContext(), InitKind::Zeros),
                      FloatAttr(), b.getUnitAttr());
  // Zero again after every step (the step resets it, or under pp each
  // program's copy wraps at M).
  counter->setAttr(kTransientAttr, b.getUnitAttr());
  auto count = [&](auto op) {
    op.getMicrobatchMutable().assign(counter.getResult());
    op.setMicrobatchesAttr(b.getI64IntegerAttr(microbatches));
  };
  for (Operation *op : dropouts)
    TypeSwitch<Operation *>(op).Case<DropoutOp, AttentionOp, AttentionGradOp>(
        count);
  b.setInsertionPoint(body.getTerminator());
  weft::detail::Emitter e{b, loc};
  AssignOp::create(b, loc, counter.getNameAttr(),
                   e.add(counter.getResult(), e.splat(scalar, 1.0)));
}

/// @accumulate's micro-batch counter (countMicrobatches), if it has one.
ParamOp microbatchCounter(func::FuncOp accumulate) {
  for (ParamOp p : accumulate.getBody().front().getOps<ParamOp>())
    if (p.getName() == kDropoutMicrobatchParam)
      return p;
  return ParamOp();
}

std::string accumulatorName(StringRef param) {
  return (param + kGradAccumulatorSuffix).str();
}
constexpr const char *kLossAccumulator = "loss.accumulated";
} // namespace

LogicalResult weft::accumulateGradients(func::FuncOp grad,
                                        int64_t microbatches) {
  // A pipeline runs the step as micro-batches even when there is one.
  bool staged = grad->hasAttr(kStagesAttr);
  if (microbatches == 1 && !staged)
    return success();
  if (microbatches < 1)
    return grad.emitError("weft-accumulate-gradients: microbatches must be "
                          "at least 1, got ")
           << microbatches;
  if (grad.isExternal() || grad.getNumResults() < 1 ||
      grad.getResultAttrOfType<StringAttr>(0, "weft.output") !=
          StringAttr::get(grad.getContext(), "loss"))
    return grad.emitError("weft-accumulate-gradients: @")
           << grad.getSymName()
           << " is not a gradient function (run weft-autodiff first)";
  if (SymbolTable::lookupNearestSymbolFrom(
          grad, StringAttr::get(grad.getContext(), kAccumulateFunc)))
    return grad.emitError("weft-accumulate-gradients: a symbol named @")
           << kAccumulateFunc << " already exists";
  llvm::StringMap<ParamOp> params;
  for (ParamOp p : grad.getBody().front().getOps<ParamOp>())
    params[p.getName()] = p;
  SmallVector<ParamOp> gradOf; // Per result after the loss.
  for (unsigned r = 1; r < grad.getNumResults(); ++r) {
    auto tag = grad.getResultAttrOfType<StringAttr>(r, "weft.grad");
    ParamOp param = tag ? params.lookup(tag.getValue()) : ParamOp();
    if (!param)
      return grad.emitError("weft-accumulate-gradients: result ")
             << r << " of @" << grad.getSymName()
             << " is not the gradient of a parameter";
    gradOf.push_back(param);
  }

  // @accumulate: the gradient function, its gradients and loss added into
  // the accumulators instead of returned. The reductions moved to the
  // step, by accumulator: the mesh and axes each was over.
  llvm::StringMap<std::pair<FlatSymbolRefAttr, ArrayAttr>> deferred;
  OpBuilder b(grad);
  auto accumulate = cast<func::FuncOp>(b.clone(*grad));
  accumulate.setSymName(kAccumulateFunc);
  accumulate->setAttr(kMicrobatchesAttr, b.getI64IntegerAttr(microbatches));
  {
    Block &body = accumulate.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Location loc = ret.getLoc();
    b.setInsertionPointToStart(&body);
    Value loss = ret.getOperand(0);
    // The loss accumulates where the loss is computed.
    Attribute lossStage = loss.getDefiningOp()
                              ? loss.getDefiningOp()->getAttr(kStageAttr)
                              : Attribute();
    ParamOp lossAcc =
        declareAccumulator(b, loc, loss.getType(), kLossAccumulator, ParamOp());
    if (lossStage)
      lossAcc->setAttr(kStageAttr, lossStage);
    SmallVector<ParamOp> accs;
    for (ParamOp param : gradOf)
      accs.push_back(declareAccumulator(b, param.getLoc(), param.getType(),
                                        accumulatorName(param.getName()),
                                        param));
    b.setInsertionPoint(ret);
    detail::Emitter e{b, loc};
    Operation *before = ret->getPrevNode();
    AssignOp::create(b, loc, lossAcc.getNameAttr(),
                     e.add(lossAcc.getResult(), loss));
    placeOnStage(before, ret, lossStage);
    SmallVector<Operation *> reduced; // Each sum after its widening.
    for (auto [param, acc, g] :
         llvm::zip(gradOf, accs, ret.getOperands().drop_front())) {
      // The data-parallel sum, once per step in the step rather than once
      // per micro-batch (sums commute): the accumulator adds this rank's
      // own gradient (Megatron reduces after the last micro-batch).
      Value part = g;
      CastOp widen;
      if (AllReduceOp sum = deferrableReduction(g, param, widen)) {
        deferred[acc.getName()] = {sum.getMeshAttr(), sum.getAxesAttr()};
        part = sum.getInputs()[0];
        if (widen) {
          OpBuilder at(widen);
          part = CastOp::create(at, widen.getLoc(), widen.getType(), part);
          // On the widening's pipeline stage (it is made before `before`).
          if (Attribute stage = widen->getAttr(kStageAttr))
            part.getDefiningOp()->setAttr(kStageAttr, stage);
          reduced.push_back(widen);
        }
        reduced.push_back(sum);
      }
      before = ret->getPrevNode();
      AssignOp::create(b, loc, acc.getNameAttr(), e.add(acc.getResult(), part));
      placeOnStage(before, ret, acc->getAttr(kStageAttr));
    }
    countMicrobatches(accumulate, microbatches);
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, loc, ValueRange{loss});
    ret.erase();
    for (Operation *op : reduced)
      op->erase();
    accumulate.setFunctionType(
        b.getFunctionType(body.getArgumentTypes(), {loss.getType()}));
    accumulate.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
    accumulate.setResultAttr(0, "weft.output", b.getStringAttr("loss"));
  }

  // Under ZeRO-0/1, the last micro-batch reduces each
  // accumulator right after adding its gradient (@accumulate_last), so the
  // reductions overlap its backward; the step then reads global sums. The
  // sum is the same: each rank's micro-batches first, then the ranks.
  // ZeRO-2/3's gradients are reduce-scattered per micro-batch already (and
  // ZeRO-3's gathers, which weft-gather-per-step moves out of @accumulate,
  // must not stay in a second copy), as are a narrow model's ZeRO-1
  // masters' (stored split).
  // With a pipeline each stage reduces its own accumulators in its last
  // backward (weft-pipeline-split), and the stages that finish early
  // reduce while the others still work.
  bool reduceLast = !deferred.empty() && llvm::none_of(gradOf, [](ParamOp p) {
    return p->hasAttr(kGradShardAttr) || p->hasAttr(kZeroShardAttr);
  });
  if (reduceLast) {
    b.setInsertionPointAfter(accumulate);
    auto last = cast<func::FuncOp>(b.clone(*accumulate));
    last.setSymName(kAccumulateLastFunc);
    last.walk([&](AssignOp assign) {
      auto it = deferred.find(assign.getName());
      if (it == deferred.end())
        return;
      // The sum moves up to where the micro-batch's gradient is made, so
      // its reduction is issued there, under the rest of the backward
      // (and buckets with its neighbours); the state is written at the end.
      OpBuilder at(assign);
      auto add = assign.getValue().getDefiningOp<AddOp>();
      Operation *made = add ? add.getRhs().getDefiningOp() : nullptr;
      if (made && add.getLhs().getDefiningOp<ParamOp>()) {
        add->moveAfter(made);
        at.setInsertionPointAfter(add);
      }
      auto reduce = AllReduceOp::create(
          at, assign.getLoc(),
          ReduceKindAttr::get(at.getContext(), ReduceKind::Sum),
          ValueRange{assign.getValue()}, it->second.first, it->second.second);
      reduce->setAttr(kLastReductionAttr, at.getUnitAttr());
      if (Operation *sum = assign.getValue().getDefiningOp())
        if (Attribute stage = sum->getAttr(kStageAttr))
          reduce->setAttr(kStageAttr, stage);
      assign.getValueMutable().assign(reduce.getResult(0));
    });
  }

  // The gradient function again, as the accumulators' mean: no inputs, the
  // parameters it updates declared, the accumulators zeroed for the next
  // step.
  b.setInsertionPoint(grad);
  auto mean =
      func::FuncOp::create(b, grad.getLoc(), grad.getSymName(),
                           b.getFunctionType({}, grad.getResultTypes()));
  Block *body = mean.addEntryBlock();
  b.setInsertionPointToStart(body);
  Location loc = grad.getLoc();
  detail::Emitter e{b, loc};
  for (ParamOp param : grad.getBody().front().getOps<ParamOp>())
    b.clone(*param.getOperation());
  ParamOp lossAcc = declareAccumulator(b, loc, grad.getResultTypes()[0],
                                       kLossAccumulator, ParamOp());
  if (Operation *def =
          grad.getBody().front().getTerminator()->getOperand(0).getDefiningOp())
    if (Attribute stage = def->getAttr(kStageAttr))
      lossAcc->setAttr(kStageAttr, stage);
  SmallVector<Value> results;
  auto average = [&](ParamOp acc) {
    auto type = cast<RankedTensorType>(acc.getType());
    Value sum = acc.getResult();
    if (auto it = deferred.find(acc.getName());
        it != deferred.end() && !reduceLast)
      sum = AllReduceOp::create(
                b, loc, ReduceKindAttr::get(b.getContext(), ReduceKind::Sum),
                ValueRange{sum}, it->second.first, it->second.second)
                .getResult(0);
    Value result = e.mul(sum, e.splat(type, 1.0 / microbatches));
    AssignOp::create(b, loc, acc.getNameAttr(), e.splat(type, 0.0));
    return result;
  };
  if (ParamOp counter = microbatchCounter(accumulate)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    b.clone(*counter.getOperation());
    b.setInsertionPointToEnd(body);
    AssignOp::create(b, loc, counter.getNameAttr(),
                     e.splat(cast<RankedTensorType>(counter.getType()), 0.0));
  }
  results.push_back(average(lossAcc));
  for (ParamOp param : gradOf)
    results.push_back(
        average(declareAccumulator(b, param.getLoc(), param.getType(),
                                   accumulatorName(param.getName()), param)));
  func::ReturnOp::create(b, loc, results);
  SmallVector<DictionaryAttr> resultAttrs;
  grad.getAllResultAttrs(resultAttrs);
  mean.setAllResultAttrs(resultAttrs);
  // What weft-recompute recorded describes the backward, which @accumulate
  // runs, not the mean: one program carries it (and its copies for the
  // last micro-batch).
  for (NamedAttribute attr : grad->getDiscardableAttrs())
    if (!llvm::is_contained({kRecomputeAttr, kRecomputeFlopsAttr,
                             kRecomputeLayerFlopsAttr, kActivationBytesAttr,
                             kKorthikantiBytesAttr, kKorthikantiCoreBytesAttr},
                            attr.getName().getValue()))
      mean->setAttr(attr.getName(), attr.getValue());
  grad.erase();
  return success();
}

namespace {
struct AccumulateGradientsPass
    : weft::impl::AccumulateGradientsBase<AccumulateGradientsPass> {
  using AccumulateGradientsBase::AccumulateGradientsBase;

  void runOnOperation() override {
    auto grad = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!grad) {
      getOperation().emitError("weft-accumulate-gradients: no function "
                               "named @")
          << func;
      return signalPassFailure();
    }
    if (failed(accumulateGradients(grad, microbatches)))
      signalPassFailure();
  }
};
} // namespace

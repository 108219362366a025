//===- Autodiff.cpp - reverse-mode automatic differentiation --------------===//
//
// A tape-free reverse sweep: the forward ops stay in the gradient function as
// they are, and the backward ops are appended after them, reading the
// forward values they need directly (the memory planner decides later what
// stays live, and recomputation passes may trade it for compute).
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <map>

namespace weft {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/autodiff/Passes.h.inc"
} // namespace weft

using namespace mlir;

namespace {
/// Ops on a path from a parameter to the loss: their results are both varied
/// (depend on a parameter) and useful (the loss depends on them). Integer
/// values (expert ids, routing positions) are never varied: a small change of
/// a parameter leaves them as they are, so what is computed from them alone
/// (the one-hot counts of a load-balancing loss) has no gradient.
llvm::DenseSet<Operation *> activeOps(func::FuncOp func, Value loss) {
  llvm::DenseSet<Value> varied, useful;
  Block &body = func.getBody().front();
  for (Operation &op : body) {
    auto param = dyn_cast<weft::ParamOp>(op);
    bool fromParam = (param && !param.getState()) ||
                     llvm::any_of(op.getOperands(),
                                  [&](Value v) { return varied.contains(v); });
    if (fromParam)
      for (Value r : op.getResults())
        if (auto type = dyn_cast<RankedTensorType>(r.getType());
            type && isa<FloatType>(type.getElementType()))
          varied.insert(r);
  }
  useful.insert(loss);
  for (Operation &op : llvm::reverse(body))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      useful.insert(op.getOperands().begin(), op.getOperands().end());
  llvm::DenseSet<Operation *> active;
  for (Operation &op : body)
    if (llvm::any_of(op.getResults(), [&](Value v) {
          return varied.contains(v) && useful.contains(v);
        }))
      active.insert(&op);
  return active;
}

bool isZeroSplat(Value v) {
  auto c = v.getDefiningOp<weft::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat() && isa<FloatType>(dense.getElementType()) &&
         dense.getSplatValue<APFloat>().isZero();
}

/// a + b when both are concats along one dimension whose non-zero parts do
/// not overlap: one concat of the non-zero parts with zeros between, else
/// null. Slices that split a tensor (GPT-2's fused q, k, v) each get a
/// gradient padded with zeros to the whole; summed, that would be a
/// concat per slice and an add per pair over the whole tensor.
Value sumDisjointConcats(weft::detail::Emitter &e, Value a, Value b) {
  auto ca = a.getDefiningOp<weft::ConcatOp>(),
       cb = b.getDefiningOp<weft::ConcatOp>();
  if (!ca || !cb || ca.getDim() != cb.getDim() || a.getType() != b.getType())
    return nullptr;
  int64_t dim = static_cast<int64_t>(ca.getDim());
  // The non-zero parts of both, by their offset along `dim`.
  std::map<int64_t, Value> parts;
  for (weft::ConcatOp concat : {ca, cb}) {
    int64_t offset = 0;
    for (Value part : concat.getInputs()) {
      int64_t size = e.typeOf(part).getDimSize(dim);
      if (!isZeroSplat(part) && !parts.emplace(offset, part).second)
        return nullptr; // Both non-zero from the same offset: a real sum.
      offset += size;
    }
  }
  SmallVector<Value> merged;
  int64_t at = 0, total = e.typeOf(a).getDimSize(dim);
  auto zeros = [&](int64_t size) {
    SmallVector<int64_t> shape(e.typeOf(a).getShape());
    shape[dim] = size;
    merged.push_back(e.splat(
        RankedTensorType::get(shape, e.typeOf(a).getElementType()), 0.0));
  };
  for (auto [offset, part] : parts) {
    if (offset < at) // Overlapping non-zero parts: a real sum.
      return nullptr;
    if (offset > at)
      zeros(offset - at);
    merged.push_back(part);
    at = offset + e.typeOf(part).getDimSize(dim);
  }
  if (at < total)
    zeros(total - at);
  return merged.size() == 1
             ? merged.front()
             : weft::ConcatOp::create(e.b, e.loc, merged, dim).getResult();
}
} // namespace

LogicalResult weft::checkForwardOps(func::FuncOp forward) {
  // Left in, each fails far later at an instruction the user never wrote.
  // Health probes (weft-probes) are the forward's only writes.
  llvm::StringSet<> probes;
  for (ParamOp p : forward.getOps<ParamOp>())
    if (p->hasAttr(kProbeAttr))
      probes.insert(p.getName());
  for (Operation &op : forward.getOps()) {
    if (auto call = dyn_cast<func::CallOp>(op))
      return call.emitError("weft-autodiff: @")
             << forward.getSymName() << " calls "
             << (call.getCallee() == forward.getSymName()
                     ? Twine("itself")
                     : "@" + call.getCallee())
             << ": Weft compiles a single function; inline the callee";
    if (auto assign = dyn_cast<AssignOp>(op);
        assign && !probes.contains(assign.getName()))
      return assign.emitError("weft-autodiff: @")
             << forward.getSymName() << " may not assign parameter '"
             << assign.getName()
             << "': the optimizer step Weft builds updates parameters";
  }
  return success();
}

FailureOr<func::FuncOp> weft::differentiate(func::FuncOp forward,
                                            StringRef name,
                                            const LossScaling &scaling) {
  if (forward.getBody().getBlocks().size() != 1)
    return forward.emitError("weft-autodiff needs a single-block function");
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  auto lossType = ret.getNumOperands()
                      ? dyn_cast<RankedTensorType>(ret.getOperand(0).getType())
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0 ||
      !lossType.getElementType().isF32())
    return forward.emitError("weft-autodiff: the first result of @")
           << forward.getSymName() << " must be the 0-d f32 loss";
  if (failed(checkForwardOps(forward)))
    return failure();
  if (SymbolTable::lookupNearestSymbolFrom(
          forward, StringAttr::get(forward.getContext(), name)))
    return forward.emitError("weft-autodiff: a symbol named @")
           << name << " already exists";

  OpBuilder builder(forward);
  builder.setInsertionPointAfter(forward);
  auto grad = cast<func::FuncOp>(builder.clone(*forward));
  grad.setSymName(name);
  Block &body = grad.getBody().front();
  auto gradRet = cast<func::ReturnOp>(body.getTerminator());
  Value loss = gradRet.getOperand(0);
  llvm::DenseSet<Operation *> active = activeOps(grad, loss);
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);

  builder.setInsertionPoint(gradRet);
  Location loc = gradRet.getLoc();
  detail::Emitter e{builder, loc};
  // A pipeline stage (weft.stage) is where an op runs: the ops emitted by
  // `emit` run where `like` does, so an op's gradient runs on its stage
  // and a value's gradient is summed where the value lives.
  auto onStageOf = [&](Operation *like, auto emit) {
    Operation *before = gradRet->getPrevNode();
    auto result = emit();
    placeOnStage(before, gradRet, like ? like->getAttr(kStageAttr) : nullptr);
    return result;
  };
  llvm::DenseMap<Value, Value> adjoint;
  Value seed;
  if (scaling.initial > 0) {
    // The loss scale: a state parameter (ones) times the initial scale.
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body);
    auto scale = ParamOp::create(
        builder, loc, lossType, builder.getStringAttr(kLossScaleParam),
        InitKindAttr::get(builder.getContext(), InitKind::Ones), FloatAttr(),
        builder.getUnitAttr());
    scale->setAttr(kLossScaleAttr, builder.getF64FloatAttr(scaling.initial));
    scale->setAttr(kLossScaleWindowAttr,
                   builder.getI64IntegerAttr(scaling.window));
    builder.setInsertionPoint(gradRet);
    seed = onStageOf(loss.getDefiningOp(), [&] {
      return e.mul(scale.getResult(), e.splat(lossType, scaling.initial));
    });
  } else {
    seed =
        onStageOf(loss.getDefiningOp(), [&] { return e.splat(lossType, 1.0); });
  }
  adjoint[loss] = seed;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = adjoint.try_emplace(v, g);
    if (inserted)
      return;
    Value previous = it->second;
    // Summed where both parts are made when that is one stage (one
    // gradient then crosses to v's stage, not two), else where v lives.
    // The concats merged away die with the other unused ops at the end.
    Operation *a = previous.getDefiningOp(), *b = g.getDefiningOp();
    bool together = a && b && a->getAttr(kStageAttr) &&
                    a->getAttr(kStageAttr) == b->getAttr(kStageAttr);
    it->second = onStageOf(together ? a : v.getDefiningOp(), [&] {
      Value sum = sumDisjointConcats(e, previous, g);
      return sum ? sum : e.add(previous, g);
    });
  };

  for (Operation *op : llvm::reverse(forwardOps)) {
    if (!active.contains(op) || isa<ParamOp>(op))
      continue;
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(adjoint.lookup(r));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule) {
      op->emitError("weft-autodiff: no gradient rule for '")
          << op->getName() << "'";
      grad.erase();
      return failure();
    }
    FailureOr<SmallVector<Value>> operandGrads = onStageOf(
        op, [&] { return rule.buildGradients(builder, resultGrads); });
    if (failed(operandGrads)) {
      grad.erase();
      return failure();
    }
    for (auto [operand, g] : llvm::zip(op->getOperands(), *operandGrads))
      if (g && operand.getDefiningOp() &&
          active.contains(operand.getDefiningOp()))
        accumulate(operand, g);
  }

  // Results: the loss, then one gradient per parameter in declaration order.
  SmallVector<Value> results = {loss};
  SmallVector<StringRef> names;
  for (Operation *op : forwardOps)
    if (auto param = dyn_cast<ParamOp>(op); param && !param.getState()) {
      Value g = adjoint.lookup(param.getResult());
      results.push_back(g ? g : onStageOf(param, [&] {
        return e.splat(param.getResult().getType(), 0.0);
      }));
      names.push_back(param.getName());
    }
  func::ReturnOp::create(builder, loc, results);
  gradRet.erase();
  grad.setFunctionType(builder.getFunctionType(body.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
  grad.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  grad.setResultAttr(0, "weft.output", builder.getStringAttr("loss"));
  for (auto [i, n] : llvm::enumerate(names))
    grad.setResultAttr(i + 1, "weft.grad", builder.getStringAttr(n));

  // Drop forward results nobody needs any more (logits-only ops) and the
  // operand gradients rules built for inactive operands.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return grad;
}

namespace {
struct AutodiffPass : weft::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward) {
      getOperation().emitError("weft-autodiff: no function named @") << func;
      return signalPassFailure();
    }
    if (lossScale < 0 || !std::isfinite(lossScale) || lossScaleWindow < 1) {
      getOperation().emitError("weft-autodiff: loss-scale must be 0 (off) or "
                               "a positive finite scale, and "
                               "loss-scale-window at least 1");
      return signalPassFailure();
    }
    if (failed(weft::differentiate(
            forward, out, weft::LossScaling{lossScale, lossScaleWindow})))
      signalPassFailure();
  }
};
} // namespace

//===- RecordAmax.cpp - delayed scaling's amax history update -------------===//
//
// weft-fp8 (tensorwise-delayed) quantizes by the largest block maximum of
// earlier steps; this pass makes the step that updates parameters also
// push this step's maxima onto those histories, so the forward and kept
// gradient programs only read them.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Names.h"
#include "passes/precision/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace weft {
#define GEN_PASS_DEF_FP8RECORDAMAX
#include "passes/precision/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// The suffix of a history's per-step maximum under gradient accumulation:
/// @accumulate folds each micro-batch's maximum into it, the step records
/// it and resets it.
constexpr const char *kStepMaxSuffix = ".step_max";

/// The `weft.fp8_amax` ops of `func` that name an amax history.
SmallVector<Fp8AmaxOp> recordedMaxima(func::FuncOp func) {
  SmallVector<Fp8AmaxOp> recorded;
  func.walk([&](Fp8AmaxOp a) {
    if (a->hasAttr(kAmaxHistoryAttr))
      recorded.push_back(a);
  });
  return recorded;
}

/// `a`'s value as one f32 scalar: after the max all-reduce that partitioning
/// put after it if any (the maximum over every rank its blocks span).
Value scalarMaximum(Fp8AmaxOp a, weft::detail::Emitter &e) {
  Value amax = a.getResult();
  for (Operation *user : amax.getUsers())
    if (auto reduce = dyn_cast<AllReduceOp>(user))
      if (reduce.getReduction() == ReduceKind::Max)
        amax = reduce.getResult(0);
  return e.reshape(amax, RankedTensorType::get({}, e.b.getF32Type()));
}

/// A step's running maximum `name` of `type`, zeros at first, declared at
/// the start of `func` (or the one it already has), on pipeline stage
/// `stage` (its history's; null without a pipeline). Transient: the step
/// zeroes it once pushed, so checkpoints skip it.
ParamOp stateParam(func::FuncOp func, StringRef name, RankedTensorType type,
                   IntegerAttr stage) {
  for (ParamOp p : func.getBody().front().getOps<ParamOp>())
    if (p.getName() == name)
      return p;
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  auto p = ParamOp::create(b, func.getLoc(), type, b.getStringAttr(name),
                           InitKindAttr::get(b.getContext(), InitKind::Zeros),
                           FloatAttr(), b.getUnitAttr());
  if (stage)
    p->setAttr(kStageAttr, stage);
  p->setAttr(kTransientAttr, b.getUnitAttr());
  return p;
}

/// Pushes `amax` (a scalar) onto the front of `history`, the oldest step
/// dropping off. A non-finite maximum (an overflowed step's) is recorded as
/// 0, which the history's maximum ignores: one overflow would otherwise make
/// the next `history` steps' scales NaN.
void push(OpBuilder &b, Location loc, ParamOp history, Value amax) {
  weft::detail::Emitter e{b, loc};
  auto type = cast<RankedTensorType>(history.getType());
  int64_t length = type.getDimSize(0);
  Value finite =
      GeOp::create(b, loc, e.splatLike(amax, 3.4028234663852886e38), amax);
  Value scalar = SelectOp::create(b, loc, finite, amax, e.splatLike(amax, 0.0));
  Value now =
      e.reshape(scalar, RankedTensorType::get({1}, type.getElementType()));
  Value rolled = now;
  if (length > 1) {
    Value older =
        SliceOp::create(b, loc, history.getResult(), ArrayRef<int64_t>{0},
                        ArrayRef<int64_t>{length - 1});
    rolled = ConcatOp::create(b, loc, ValueRange{now, older},
                              b.getI64IntegerAttr(0));
  }
  AssignOp::create(b, loc, history.getNameAttr(), rolled);
}

struct Fp8RecordAmaxPass
    : public weft::impl::Fp8RecordAmaxBase<Fp8RecordAmaxPass> {
  using Fp8RecordAmaxBase::Fp8RecordAmaxBase;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!step)
      return;
    llvm::StringMap<ParamOp> params;
    step.walk([&](ParamOp p) { params[p.getName()] = p; });
    auto historyOf = [&](Fp8AmaxOp a) -> ParamOp {
      StringRef name = a->getAttrOfType<StringAttr>(kAmaxHistoryAttr);
      ParamOp history = params.lookup(name);
      if (!history)
        a.emitError("weft-fp8-record-amax: no state parameter '")
            << name << "' in @" << func << " to record into";
      return history;
    };
    OpBuilder b = OpBuilder::atBlockTerminator(&step.getBody().front());
    // A history is pushed once a step, though recomputation clones its
    // maximum into the backward.
    llvm::StringSet<> pushed;
    for (Fp8AmaxOp a : recordedMaxima(step)) {
      ParamOp history = historyOf(a);
      if (!history)
        return signalPassFailure();
      if (!pushed.insert(history.getName()).second)
        continue;
      weft::detail::Emitter e{b, a.getLoc()};
      push(b, a.getLoc(), history, scalarMaximum(a, e));
    }
    // Gradient accumulation: each micro-batch's maximum is folded into the
    // step's (a state parameter @accumulate keeps), which the step records
    // once and resets, so a history holds one maximum a step, the whole
    // batch's, as without micro-batches.
    auto accumulate =
        getOperation().lookupSymbol<func::FuncOp>(this->accumulate);
    if (!accumulate || accumulate == step)
      return;
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    // The last micro-batch's copy (@accumulate_last, ZeRO-0/1's overlapped
    // reduction) folds its maxima the same way, and so does @gather, where
    // weft-gather-per-step quantizes a weight once a step.
    for (func::FuncOp acc :
         {accumulate,
          getOperation().lookupSymbol<func::FuncOp>(kAccumulateLastFunc),
          getOperation().lookupSymbol<func::FuncOp>(kGatherFunc)}) {
      if (acc && failed(foldMaxima(acc, step, b, scalar, historyOf, pushed)))
        return signalPassFailure();
    }
  }

  /// Folds each micro-batch maximum of `acc` into its step maximum (a
  /// state parameter), which `step` pushes once onto its history and
  /// resets.
  LogicalResult foldMaxima(func::FuncOp acc, func::FuncOp step, OpBuilder &b,
                           RankedTensorType scalar,
                           llvm::function_ref<ParamOp(Fp8AmaxOp)> historyOf,
                           llvm::StringSet<> &pushed) {
    OpBuilder inAcc = OpBuilder::atBlockTerminator(&acc.getBody().front());
    // Per step maximum, its value so far in `acc` and its assign (a
    // history's maximum taken twice, as recomputation clones it, folds
    // both into one assign).
    llvm::StringMap<std::pair<Value, AssignOp>> folds;
    Block &accBody = acc.getBody().front();
    for (Fp8AmaxOp a : recordedMaxima(acc)) {
      ParamOp history = historyOf(a);
      if (!history)
        return failure();
      // Under a pipeline, the history's stage: the fold runs there.
      auto stage = history->getAttrOfType<IntegerAttr>(kStageAttr);
      std::string name = (history.getName() + kStepMaxSuffix).str();
      ParamOp stepMax = stateParam(acc, name, scalar, stage);
      auto &[sofar, assign] = folds[name];
      if (!sofar)
        sofar = stepMax.getResult();
      if (assign)
        assign.erase();
      Operation *after = accBody.getTerminator()->getPrevNode();
      weft::detail::Emitter e{inAcc, a.getLoc()};
      // A NaN maximum is +infinity (weft.fp8_amax), which max keeps.
      sofar = MaxOp::create(inAcc, a.getLoc(), sofar, scalarMaximum(a, e));
      assign =
          AssignOp::create(inAcc, a.getLoc(), stepMax.getNameAttr(), sofar);
      placeOnStage(after, accBody.getTerminator(), stage);
      if (!pushed.insert(history.getName()).second)
        continue;
      ParamOp seen = stateParam(step, name, scalar, stage);
      push(b, a.getLoc(), history, seen.getResult());
      weft::detail::Emitter reset{b, a.getLoc()};
      AssignOp::create(b, a.getLoc(), seen.getNameAttr(),
                       reset.splat(scalar, 0.0));
    }
    return success();
  }
};
} // namespace

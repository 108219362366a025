//===- RecordAmax.cpp - delayed scaling's amax history update -------------===//
//
// weft-fp8 (tensorwise-delayed) quantizes by the largest block maximum of
// earlier steps; this pass makes the step that updates parameters also
// push this step's maxima onto those histories, so the forward and kept
// gradient programs only read them.
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FP8RECORDAMAX
#include "passes/precision/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
struct Fp8RecordAmaxPass
    : public weft::impl::Fp8RecordAmaxBase<Fp8RecordAmaxPass> {
  using Fp8RecordAmaxBase::Fp8RecordAmaxBase;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!step)
      return;
    llvm::StringMap<ParamOp> params;
    step.walk([&](ParamOp p) { params[p.getName()] = p; });
    SmallVector<Fp8AmaxOp> recorded;
    step.walk([&](Fp8AmaxOp a) {
      if (a->hasAttr(kAmaxHistoryAttr))
        recorded.push_back(a);
    });
    OpBuilder b = OpBuilder::atBlockTerminator(&step.getBody().front());
    for (Fp8AmaxOp a : recorded) {
      StringRef name = a->getAttrOfType<StringAttr>(kAmaxHistoryAttr);
      ParamOp history = params.lookup(name);
      if (!history) {
        a.emitError("weft-fp8-record-amax: no state parameter '")
            << name << "' in @" << func << " to record into";
        return signalPassFailure();
      }
      // The maximum over every rank the blocks span, where partitioning
      // completed a partial one.
      Value amax = a.getResult();
      for (Operation *user : amax.getUsers())
        if (auto reduce = dyn_cast<AllReduceOp>(user))
          if (reduce.getReduction() == ReduceKind::Max)
            amax = reduce.getResult(0);
      Location loc = a.getLoc();
      weft::detail::Emitter e{b, loc};
      auto type = cast<RankedTensorType>(history.getType());
      int64_t length = type.getDimSize(0);
      // A non-finite maximum (an overflowed step's) is recorded as 0, which
      // the history's maximum ignores: one overflow would otherwise make
      // the next `history` steps' scales NaN.
      Type f32 = type.getElementType();
      Value scalar = e.reshape(amax, RankedTensorType::get({}, f32));
      Value finite = GeOp::create(
          b, loc, e.splatLike(scalar, 3.4028234663852886e38), scalar);
      scalar =
          SelectOp::create(b, loc, finite, scalar, e.splatLike(scalar, 0.0));
      Value now = e.reshape(scalar, RankedTensorType::get({1}, f32));
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
  }
};
} // namespace

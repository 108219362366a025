//===- EvalForward.cpp - the evaluation forward without dropout -----------===//
//
// The model's forward is both what autodiff differentiates (training, with
// dropout) and, once the gradient function exists, the program evaluation
// and sampling run, where dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

namespace weft {
#define GEN_PASS_DEF_EVALFORWARD
#include "passes/autodiff/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
struct EvalForwardPass : public weft::impl::EvalForwardBase<EvalForwardPass> {
  using EvalForwardBase::EvalForwardBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward)
      return;
    SmallVector<DropoutOp> dropouts;
    forward.walk([&](DropoutOp d) { dropouts.push_back(d); });
    for (DropoutOp d : dropouts) {
      d.getResult().replaceAllUsesWith(d.getInput());
      d.erase();
    }
    // Attention drops its probabilities itself: the same op without.
    forward.walk([&](AttentionOp a) {
      if (!a.getDropout())
        return;
      for (StringRef attr : {"dropout", "seed", "split", "microbatches"})
        a->removeAttr(attr);
      a.getStepMutable().clear();
      a.getMicrobatchMutable().clear();
    });
    forward.walk([&](ParamOp p) {
      if (p.getName() == kDropoutStepParam && p->use_empty())
        p.erase();
    });
  }
};
} // namespace

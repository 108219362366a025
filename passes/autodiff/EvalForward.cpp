//===- EvalForward.cpp - the evaluation forward without dropout -----------===//
//
// The model's forward is both what autodiff differentiates (training, with
// dropout) and, once the gradient function exists, the program evaluation
// and sampling run, where dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

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
    // Health probes (weft-probes) measure training steps: evaluation
    // neither writes them nor computes what they would have held.
    llvm::StringSet<> probes;
    forward.walk([&](ParamOp p) {
      if (p->hasAttr(kProbeAttr))
        probes.insert(p.getName());
    });
    forward.walk([&](AssignOp a) {
      if (probes.contains(a.getName()))
        a.erase();
    });
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(forward.getBody().front())))
      if (isOpTriviallyDead(&op) || (op.hasAttr(kProbeAttr) && op.use_empty()))
        op.erase();
    forward.walk([&](ParamOp p) {
      if (p.getName() == kDropoutStepParam && p->use_empty())
        p.erase();
    });
  }
};
} // namespace

//===- SchedArenas.cpp - weft programs' arenas from their sched plans -----===//
//
// One memory plan decides what a step needs: the sched plan, which the
// runtimes allocate. This pass lowers a copy of the module as a bundle is
// lowered and writes each program's arena back onto its weft function, for
// what reads the weft programs (the report, the fit check, the budgeted
// recomputation search and the planner's slices).
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "codegen/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/memory/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

namespace weft {
#define GEN_PASS_DEF_SCHEDARENAS
#include "compiler/Passes.h.inc"
} // namespace weft

using namespace mlir;

void weft::addSchedPasses(OpPassManager &pm,
                          const SchedArenasOptions &options) {
  LowerToSchedOptions lower;
  lower.target = options.target;
  lower.attentionScratchMb = options.attentionScratchMb;
  lower.fp8Storage = options.fp8Storage;
  pm.addPass(createLowerToSched(lower));
  OpPassManager &programs = pm.nest<sched::ProgramOp>();
  if (options.target == "cuda") {
    if (options.overlapCollectives) {
      programs.addPass(createPrefetchGathers());
      programs.addPass(createDeferReductionReaders());
    }
    programs.addPass(createAssignStreams());
  }
  programs.addPass(createSchedPlanMemory());
}

namespace {
struct SchedArenasPass : weft::impl::SchedArenasBase<SchedArenasPass> {
  using SchedArenasBase::SchedArenasBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> copy = module.clone();
    // The copy runs apart from this pass manager (it is not nested in the
    // module), on the same context; its diagnostics carry the module's
    // locations.
    PassManager pm(&getContext());
    // Not verified after each pass: a budget search plans many candidates,
    // and this is the pipeline a bundle runs, verified there (verifying
    // here made Llama-3-8B's budgeted report 1.4x as long).
    pm.enableVerifier(false);
    // The sched lowering needs every elementwise op in a kernel. The
    // training pipeline has fused them so (single-ops), which leaves
    // nothing to do here; a module fused otherwise, or not at all, is
    // fused as a bundle's pipeline fuses it.
    weft::FuseElementwiseOptions fuse;
    fuse.singleOps = true;
    pm.addNestedPass<func::FuncOp>(weft::createFuseElementwise(fuse));
    weft::SchedArenasOptions options;
    options.target = target;
    options.attentionScratchMb = attentionScratchMb;
    options.fp8Storage = fp8Storage;
    options.overlapCollectives = overlapCollectives;
    weft::addSchedPasses(pm, options);
    if (failed(pm.run(*copy)))
      return signalPassFailure();
    Builder b(&getContext());
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      auto program = copy->lookupSymbol<weft::sched::ProgramOp>(f.getName());
      if (!program || !program.getArena()) {
        f.emitError("weft-sched-arenas: no planned sched program @")
            << f.getName();
        return signalPassFailure();
      }
      f->setAttr("weft.arena_bytes", b.getI64IntegerAttr(*program.getArena()));
    }
  }
};
} // namespace

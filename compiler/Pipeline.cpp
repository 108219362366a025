//===- Pipeline.cpp - named compiler pipelines ----------------------------===//

#include "compiler/Pipeline.h"

#include "codegen/Bundle.h"
#include "passes/autodiff/Passes.h"
#include "passes/memory/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace weft {

LogicalResult buildTrainingPrograms(ModuleOp module,
                                    const TrainingOptions &options) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("the model has no @forward function");
  FailureOr<func::FuncOp> grad = differentiate(forward, "train_step");
  if (failed(grad))
    return failure();
  FailureOr<func::FuncOp> step = buildAdamWStep(*grad, "step", options.adamw);
  if (failed(step))
    return failure();
  // The gradient function was a stage on the way to @step.
  if (options.keepGradients)
    planMemory(*grad);
  else
    grad->erase();
  planMemory(*step);
  planMemory(forward);
  return verify(module);
}

LogicalResult compileTrainingBundle(ModuleOp module, llvm::StringRef dir,
                                    const TrainingOptions &options,
                                    llvm::json::Object meta) {
  if (failed(buildTrainingPrograms(module, options)))
    return failure();
  const AdamWConfig &a = options.adamw;
  meta["optimizer"] = llvm::json::Object{{"name", "adamw"},
                                         {"beta1", a.beta1},
                                         {"beta2", a.beta2},
                                         {"eps", a.eps},
                                         {"weight_decay", a.weightDecay},
                                         {"max_grad_norm", a.maxGradNorm}};
  SmallVector<StringRef> programs = {"step", "forward"};
  if (options.keepGradients)
    programs.push_back("train_step");
  return codegen::writeBundle(module, programs, dir, std::move(meta));
}

} // namespace weft

//===- Pipeline.cpp - named compiler pipelines ----------------------------===//

#include "compiler/Pipeline.h"

#include "codegen/Bundle.h"
#include "codegen/KernelSource.h"
#include "passes/autodiff/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/memory/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;

namespace weft {

LogicalResult buildTrainingPrograms(ModuleOp module,
                                    const TrainingOptions &options) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("the model has no @forward function");
  if (options.plan.worldSize() > 1) {
    if (failed(applyPlan(module, options.plan)))
      return failure();
    propagateShardings(forward);
    if (failed(partition(forward)))
      return failure();
  }
  FailureOr<func::FuncOp> grad = differentiate(forward, "train_step");
  if (failed(grad))
    return failure();
  if (options.plan.zero == 3)
    reshardAfterForward(*grad);
  AdamWConfig adamw = options.adamw;
  if (options.plan.zero == 1 || options.plan.zero == 2) {
    adamw.zero = options.plan.zero;
    adamw.dp = options.plan.size("dp");
  }
  FailureOr<func::FuncOp> step = buildAdamWStep(*grad, "step", adamw);
  if (failed(step))
    return failure();
  // The gradient function was a stage on the way to @step.
  SmallVector<func::FuncOp> programs = {*step, forward};
  if (options.keepGradients)
    programs.push_back(*grad);
  else
    grad->erase();
  for (func::FuncOp program : programs) {
    bucketAllReduces(program,
                     static_cast<int64_t>(options.bucketMb * 1024 * 1024));
    if (!options.fuseAndPlan)
      continue;
    bool gpu = !options.cudaArchs.empty();
    if (gpu && options.gemmEpilogues)
      foldGemmEpilogues(program);
    // GPU bundles leave no elementwise op to a per-op runtime kernel.
    fuseElementwise(program, /*singleOps=*/gpu);
    planMemory(program);
  }
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
  FailureOr<std::string> library = buildKernelLibrary(module, dir);
  if (failed(library))
    return failure();
  meta["kernels"] = "kernels.so";
  if (!options.cudaArchs.empty()) {
    // The same kernels (same names) for the GPU, one cubin per architecture.
    FailureOr<std::string> source = codegen::emitCudaKernelSource(module);
    if (failed(source))
      return failure();
    llvm::json::Object cubins;
    for (const std::string &arch : options.cudaArchs) {
      std::string file = "kernels." + arch + ".cubin";
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, file);
      if (failed(codegen::compileCudaKernels(module.getLoc(), *source, path,
                                             arch, kernelCacheDir())))
        return failure();
      cubins[arch] = file;
    }
    meta["cuda"] = llvm::json::Object{{"source", "kernels.cu"},
                                      {"cubins", std::move(cubins)}};
  }
  return codegen::writeBundle(module, programs, dir, std::move(meta));
}

std::string kernelCacheDir() {
  llvm::SmallString<256> dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(dir, home, ".cache");
  else
    return "";
  llvm::sys::path::append(dir, "weft", "kernels");
  return dir.str().str();
}

FailureOr<std::string> buildKernelLibrary(ModuleOp module,
                                          llvm::StringRef dir) {
  FailureOr<std::string> source = codegen::emitKernelSource(module);
  if (failed(source))
    return failure();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create '") << dir << "': " << ec.message(),
           failure();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "kernels.so");
  if (failed(codegen::compileKernels(module.getLoc(), *source, path,
                                     kernelCacheDir())))
    return failure();
  return path.str().str();
}

} // namespace weft

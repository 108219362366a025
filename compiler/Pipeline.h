//===- Pipeline.h - named compiler pipelines --------------------*- C++ -*-===//

#ifndef WEFT_COMPILER_PIPELINE_H
#define WEFT_COMPILER_PIPELINE_H

#include "passes/optimizer/Passes.h"
#include "passes/sharding/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace weft {

struct TrainingOptions {
  AdamWConfig adamw;
  /// Also keep @train_step (loss and every gradient) as a program, so tests
  /// can compare gradients with the reference evaluator.
  bool keepGradients = false;
  /// How to place the model on ranks (empty: one rank).
  Plan plan;
  /// Largest gradient all-reduce bucket (weft-bucket-all-reduce).
  double bucketMb = 25.0;
  /// GPU architectures to build the fused kernels for with nvcc (sm_90,
  /// sm_80); empty: the CPU kernels only.
  std::vector<std::string> cudaArchs;
  /// With cudaArchs, fold linear layers' bias, GELU and GELU gradient into
  /// their GEMMs (weft-gemm-epilogue) for cuBLASLt's epilogues.
  bool gemmEpilogues = true;
  /// False: leave the programs before fusion and memory planning (tests
  /// run those rewrites themselves and compare values before and after).
  bool fuseAndPlan = true;
};

/// The training pipeline on a module whose @forward returns (loss, logits):
/// with a plan of more than one rank, weft-apply-plan,
/// weft-sharding-propagate and weft-partition on @forward; then
/// weft-autodiff (@train_step), weft-optimizer-adamw (@step),
/// weft-bucket-all-reduce, then (GPU bundles) weft-gemm-epilogue, then
/// weft-fusion-group and weft-memory-plan on @step
/// and @forward. The module is left holding the planned programs (what `weftc
/// compile --emit=mlir` prints).
mlir::LogicalResult buildTrainingPrograms(mlir::ModuleOp module,
                                          const TrainingOptions &options);

/// buildTrainingPrograms, then the bundle (programs "step" and "forward",
/// and "train_step" with keepGradients) in `dir`, with `meta` and the
/// optimizer settings in its meta: the CPU kernels (kernels.so) and, for
/// each of options.cudaArchs, a cubin (meta.cuda).
mlir::LogicalResult compileTrainingBundle(mlir::ModuleOp module,
                                          llvm::StringRef dir,
                                          const TrainingOptions &options,
                                          llvm::json::Object meta);

/// Generates the C++ kernels of every weft.fused op in `module` and compiles
/// them into `dir/kernels.so` (see codegen/KernelSource.h); returns its path.
mlir::FailureOr<std::string> buildKernelLibrary(mlir::ModuleOp module,
                                                llvm::StringRef dir);

/// Where compiled kernel libraries are cached by source hash:
/// $XDG_CACHE_HOME/weft/kernels or ~/.cache/weft/kernels.
std::string kernelCacheDir();

} // namespace weft

#endif // WEFT_COMPILER_PIPELINE_H

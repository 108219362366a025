//===- KernelSource.h - fused groups as C++ kernel source -------*- C++ -*-===//
//
// Each weft.fused group becomes one kernel body, a function computing every
// op of the group for element i, which a launcher wraps: the CPU launcher is
// a loop (compiled by the host compiler into the bundle's shared object);
// the CUDA launcher will index by thread with the same body. Each op's value
// is computed in double and rounded to float, exactly as the reference
// evaluator does, so fused kernels reproduce its values bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_KERNELSOURCE_H
#define WEFT_CODEGEN_KERNELSOURCE_H

#include "dialects/weft/IR/WeftOps.h"

#include <string>

namespace weft::codegen {

/// Names every weft.fused op in `module` (attribute `weft.kernel`) and
/// returns the C++ source of all their kernels, or fails with a diagnostic
/// on an op the generator cannot express.
mlir::FailureOr<std::string> emitKernelSource(mlir::ModuleOp module);

/// Compiles `source` into a shared object at `output` with the host C++
/// compiler ($CXX, else c++), reusing a cached object with the same source
/// hash from `cacheDir` when there is one. Fails with the compiler's output.
mlir::LogicalResult compileKernels(mlir::Location loc,
                                   const std::string &source,
                                   llvm::StringRef output,
                                   llvm::StringRef cacheDir);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_KERNELSOURCE_H

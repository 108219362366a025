//===- KernelSource.h - fused groups as C++ kernel source -------*- C++ -*-===//
//
// Each weft.fused group becomes one kernel body, a function computing every
// op of the group for element i, which a launcher wraps: the CPU launcher is
// a loop (compiled by the host compiler into the bundle's shared object);
// the CUDA launcher indexes by thread with the same body (CudaSource.cpp). Each
// op's value is computed in double and rounded to float, exactly as the
// reference evaluator does, so fused kernels reproduce its values bit for bit.
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

/// The CUDA C++ source of the same kernels (for NVRTC or nvcc, sm_80 and
/// up): kernel `weft_kN` becomes `__global__ weft_kN_cuda(in0, ..., out0,
/// ..., int64_t n)` over the same body. Element kernels take any grid (one
/// thread per element, grid-stride); row kernels (groups holding a norm)
/// take one block of 256 threads per row. n counts elements, as on the CPU.
mlir::FailureOr<std::string> emitCudaKernelSource(mlir::ModuleOp module);

/// Compiles `source` into a shared object at `output` with the host C++
/// compiler ($CXX, else c++), reusing a cached object with the same source
/// hash from `cacheDir` when there is one. Fails with the compiler's output.
mlir::LogicalResult compileKernels(mlir::Location loc,
                                   const std::string &source,
                                   llvm::StringRef output,
                                   llvm::StringRef cacheDir);

/// nvcc: $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc or on PATH ("" if
/// none).
std::string findNvcc();

/// Compiles CUDA `source` with nvcc into a cubin for `arch` (sm_90, sm_80)
/// at `output`, cached by hash; the source is written beside it as
/// kernels.cu (one for every architecture).
mlir::LogicalResult compileCudaKernels(mlir::Location loc,
                                       const std::string &source,
                                       llvm::StringRef output,
                                       llvm::StringRef arch,
                                       llvm::StringRef cacheDir);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_KERNELSOURCE_H

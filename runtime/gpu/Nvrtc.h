//===- Nvrtc.h - compile CUDA source at load time ---------------*- C++ -*-===//
//
// A bundle carries its kernels' CUDA source (kernels.cu) beside any cubins
// nvcc built. When the GPU it runs on has no cubin, the runtime compiles the
// source for that GPU with NVRTC, loaded with dlopen like the driver, so no
// binary depends on the CUDA toolkit to start. NVRTC needs no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_NVRTC_H
#define WEFT_RUNTIME_GPU_NVRTC_H

#include "absl/status/statusor.h"

#include <string>

namespace weft::runtime {

/// Compiles `source` into a cubin for `arch` (sm_90, ...) without fused
/// multiply-add (as `weftc --target cuda` does). `label` names the source
/// in errors, which carry NVRTC's log.
absl::StatusOr<std::string> compileCudaSource(const std::string &source,
                                              const std::string &arch,
                                              const std::string &label);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_NVRTC_H

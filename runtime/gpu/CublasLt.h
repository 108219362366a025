//===- CublasLt.h - GEMMs through cuBLASLt ----------------------*- C++ -*-===//
//
// weft.matmul on the GPU. cuBLASLt is loaded with dlopen like the driver.
// A GEMM's descriptors and algorithm (cuBLASLt's heuristic's first choice)
// are made once per shape at bind time and reused every step; all GEMMs
// share one workspace.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_CUBLASLT_H
#define WEFT_RUNTIME_GPU_CUBLASLT_H

#include "runtime/gpu/GpuDevice.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <memory>

namespace weft::runtime {

struct CublasLtLibrary;

class CublasLt : public GemmEngine {
public:
  /// Opens cuBLASLt on the current CUDA context, with `workspace` (device
  /// memory of `workspaceBytes`) for the algorithms that want one.
  static absl::StatusOr<std::unique_ptr<CublasLt>> open(uint64_t workspace,
                                                        size_t workspaceBytes);
  ~CublasLt() override;

  /// Makes (once per shape) the descriptors and picks the algorithm.
  absl::Status prepare(const GemmShape &shape) override;
  absl::Status matmul(const GemmShape &shape, const GemmOperands &operands,
                      void *stream) override;

private:
  struct Plan;
  CublasLt() = default;

  std::unique_ptr<CublasLtLibrary> lib;
  void *handle = nullptr;
  uint64_t workspace = 0;
  size_t workspaceBytes = 0;
  std::map<decltype(GemmShape().key()), std::unique_ptr<Plan>> plans;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_CUBLASLT_H

//===- CublasLt.h - GEMMs through cuBLASLt ----------------------*- C++ -*-===//
//
// weft.matmul on the GPU. cuBLASLt is loaded with dlopen like the driver.
// A GEMM's descriptors and algorithm (cuBLASLt's heuristic's first choice)
// are made once per shape at bind time and reused every step; all GEMMs
// share one workspace. Grouped GEMMs (weft.grouped_matmul, whose group
// sizes are the routing's) go through cuBLAS's grouped batched GEMM.
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
struct CublasLibrary;

class CublasLt : public GemmEngine {
public:
  /// Opens cuBLASLt on `device`'s CUDA context (current), with `workspace`
  /// (device memory of `workspaceBytes`) for the algorithms that want one;
  /// `device` (not owned) uploads grouped GEMMs' arguments. cuBLAS itself
  /// is opened on the first grouped GEMM: programs without experts do not
  /// need it.
  static absl::StatusOr<std::unique_ptr<CublasLt>>
  open(GpuDevice &device, uint64_t workspace, size_t workspaceBytes);
  ~CublasLt() override;

  /// Makes (once per shape) the descriptors and picks the algorithm.
  absl::Status prepare(const GemmShape &shape) override;
  absl::Status matmul(const GemmShape &shape, const GemmOperands &operands,
                      void *stream) override;
  absl::Status groupedMatmul(const std::vector<GemmProblem> &problems,
                             DeviceBuffer scratch, void *stream) override;

private:
  struct Plan;
  CublasLt() = default;
  /// Loads cuBLAS and makes its handle, on the first grouped GEMM.
  absl::Status openBlas();
  absl::Status blasCheck(int status, const char *what) const;

  std::unique_ptr<CublasLtLibrary> lib;
  std::unique_ptr<CublasLibrary> blas;
  GpuDevice *device = nullptr;
  void *handle = nullptr, *blasHandle = nullptr;
  uint64_t workspace = 0;
  size_t workspaceBytes = 0;
  std::map<decltype(GemmShape().key()), std::unique_ptr<Plan>> plans;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_CUBLASLT_H

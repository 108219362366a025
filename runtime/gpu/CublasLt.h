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

#include "runtime/support/Float.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace weft::runtime {

/// A row-major batched product C[b] = op(A[b]) op(B[b]) (weft.matmul): A is
/// [m, k] ([k, m] when transA), B [k, n] ([n, k] when transB), C [m, n]; a
/// batch stride of 0 reuses one matrix for every batch. A, B and C share
/// `type` (f32 or bf16); accumulation is f32.
struct GemmShape {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; // In elements.
  DType type = DType::F32;

  auto key() const {
    return std::make_tuple(transA, transB, m, n, k, batch, strideA, strideB,
                           strideC, static_cast<int>(type));
  }
  /// 2mnk per batch.
  double flops() const { return 2.0 * m * n * k * batch; }
};

struct CublasLtLibrary;

class CublasLt {
public:
  /// Opens cuBLASLt on the current CUDA context, with `workspace` (device
  /// memory of `workspaceBytes`) for the algorithms that want one.
  static absl::StatusOr<std::unique_ptr<CublasLt>> open(uint64_t workspace,
                                                        size_t workspaceBytes);
  ~CublasLt();

  /// Makes (once per shape) the descriptors and picks the algorithm.
  absl::Status prepare(const GemmShape &shape);
  /// Queues C = op(A) op(B) on `stream`; `shape` must have been prepared.
  absl::Status matmul(const GemmShape &shape, uint64_t a, uint64_t b,
                      uint64_t c, void *stream);

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

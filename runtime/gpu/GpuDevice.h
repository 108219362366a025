//===- GpuDevice.h - what the GPU runtime asks of a device ------*- C++ -*-===//
//
// GpuBackend runs programs through these two interfaces: a device (memory,
// kernels, a stream, graphs) and a GEMM engine. CudaDevice and CublasLt
// implement them on NVIDIA GPUs; the tests implement them on the CPU
// (test/runtime/EmulatedGpu), which runs the same kernel sources, plans and
// argument blobs on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_GPUDEVICE_H
#define WEFT_RUNTIME_GPU_GPUDEVICE_H

#include "runtime/support/Epilogue.h"
#include "runtime/support/Float.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace weft::runtime {

/// Device memory; freed with its device.
struct DeviceBuffer {
  uint64_t address = 0;
  size_t bytes = 0;
};

class GpuDevice {
public:
  virtual ~GpuDevice() = default;
  /// The GPU's name and its architecture ("sm_90").
  virtual const std::string &name() const = 0;
  virtual const std::string &arch() const = 0;

  /// `bytes` of device memory; running out is an error giving the free and
  /// total memory.
  virtual absl::StatusOr<DeviceBuffer> allocate(size_t bytes) = 0;
  virtual absl::Status copyToDevice(DeviceBuffer to, const void *from,
                                    size_t bytes) = 0;
  virtual absl::Status copyToHost(void *to, DeviceBuffer from,
                                  size_t bytes) = 0;
  /// A kernel of the loaded modules (the first that has `name`).
  virtual absl::StatusOr<void *> function(const std::string &name) = 0;

  /// A stream, destroyed with the device.
  virtual absl::StatusOr<void *> createStream() = 0;
  /// Queues `function` on `stream` with a `grid` of `block`-thread blocks;
  /// `args` points to each argument's value, as cuLaunchKernel takes them.
  virtual absl::Status launchAsync(void *function, const unsigned grid[3],
                                   unsigned block, void **args,
                                   void *stream) = 0;
  virtual absl::Status zeroAsync(uint64_t address, size_t bytes,
                                 void *stream) = 0;
  virtual absl::Status copyAsync(uint64_t to, uint64_t from, size_t bytes,
                                 void *stream) = 0;
  /// Waits for `stream`'s work; a kernel's fault surfaces here.
  virtual absl::Status synchronize(void *stream) = 0;
  /// An event, destroyed with the device; `record` marks the point `stream`
  /// has reached, and `wait` holds `stream` until that point is passed.
  virtual absl::StatusOr<void *> createEvent() = 0;
  virtual absl::Status record(void *event, void *stream) = 0;
  virtual absl::Status wait(void *stream, void *event) = 0;
  /// Records what `work` queues on `stream` into a graph instead of running
  /// it, and returns the graph ready to replay (freed with the device).
  virtual absl::StatusOr<void *>
  capture(void *stream, const std::function<absl::Status()> &work) = 0;
  virtual absl::Status replay(void *graph, void *stream) = 0;
};

/// A row-major batched product C[b] = alpha op(A[b]) op(B[b]) + beta C[b]
/// (weft.matmul, and attention's products): A is [m, k] ([k, m] when
/// transA), B [k, n] ([n, k] when transB), C [m, n]; each matrix's rows are
/// `ld` elements apart (0: packed, its row width) and its batches `stride`
/// apart (0: one matrix for every batch). A and B have `type` (f32 or bf16);
/// C has it too, or f32 with `f32Out`; accumulation is f32. An FP8 GEMM
/// has A and B in `fp8A` and `fp8B` (f8E4M3FN or f8E5M2, not both E5M2),
/// C in `type`, and the product scaled by the one-f32 scales its operands
/// point at; cuBLASLt reads FP8 only with k contiguous in both (A [m, k],
/// B [n, k]: transB and not transA, "TN").
struct GemmShape {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; // In elements.
  int64_t lda = 0, ldb = 0, ldc = 0;             // In elements; 0: packed.
  DType type = DType::F32;
  bool f32Out = false;
  DType fp8A = DType::F32, fp8B = DType::F32; // FP8 formats, or F32: none.
  /// How the FP8 scales scale A and B (WEFT_FP8_SCALE_* of
  /// runtime/support/Fp8Scaling.h: one f32, per row, 1 x 128 or 128 x 128
  /// blocks, in the layouts it gives).
  int scaleModeA = 0, scaleModeB = 0;
  /// The largest power of two (at most 256) dividing each matrix's address:
  /// cuBLASLt's heuristic otherwise assumes 256-byte-aligned pointers.
  int64_t alignA = 256, alignB = 256, alignC = 256;
  GemmEpilogue epilogue = GemmEpilogue::None;
  int64_t alignBias = 256, alignAux = 256; // As alignA, for the epilogue's.
  float alpha = 1, beta = 0; // Passed per call: not part of the plan.

  auto key() const {
    return std::make_tuple(
        transA, transB, m, n, k, batch, strideA, strideB, strideC, lda, ldb,
        ldc, static_cast<int>(type), f32Out, static_cast<int>(fp8A),
        static_cast<int>(fp8B), scaleModeA, scaleModeB, alignA, alignB, alignC,
        static_cast<int>(epilogue), alignBias, alignAux);
  }
  bool hasBias() const { return epilogueHasBias(epilogue); }
  bool fp8() const { return isFp8(fp8A); }
  bool hasAux() const { return epilogueHasAux(epilogue); }
  /// Row strides, resolving 0 to the packed width.
  int64_t rowA() const { return lda ? lda : transA ? m : k; }
  int64_t rowB() const { return ldb ? ldb : transB ? k : n; }
  int64_t rowC() const { return ldc ? ldc : n; }
  DType outType() const { return f32Out ? DType::F32 : type; }
  /// 2mnk per batch.
  double flops() const { return 2.0 * m * n * k * batch; }
};

/// A GEMM's device addresses: C (also its output), the bias vector and aux
/// matrix when its epilogue has them, and an FP8 GEMM's scales (else 0).
struct GemmOperands {
  uint64_t a = 0, b = 0, c = 0, bias = 0, aux = 0, scaleA = 0, scaleB = 0;
};

/// One product of a grouped GEMM: an f32 `shape` of one batch and no
/// epilogue, whose m, n and k vary from call to call (they come from the
/// routing), on `operands`.
struct GemmProblem {
  GemmShape shape;
  GemmOperands operands;
};

class GemmEngine {
public:
  virtual ~GemmEngine() = default;
  /// Makes ready (once per shape, at bind time) what `shape` needs.
  virtual absl::Status prepare(const GemmShape &shape) = 0;
  /// Queues C = epilogue(op(A) op(B)) on `stream`; `shape` must have been
  /// prepared.
  virtual absl::Status matmul(const GemmShape &shape,
                              const GemmOperands &operands, void *stream) = 0;
  /// Device memory groupedMatmul may use for `problems` problems' arguments.
  static constexpr size_t groupedScratchBytes(size_t problems) {
    return 3 * sizeof(uint64_t) * problems;
  }
  /// Queues `problems` on `stream` with the effect of running them one
  /// after another (a problem accumulating, beta 1, into a C an earlier one
  /// wrote adds to its result), in as few calls as the engine can: cuBLAS's
  /// grouped GEMM. `scratch` (groupedScratchBytes(problems.size()) bytes)
  /// is this call's alone until its work is done.
  virtual absl::Status groupedMatmul(const std::vector<GemmProblem> &problems,
                                     DeviceBuffer scratch, void *stream) = 0;
};

/// The collectives of a placed bundle on device memory, over the group of
/// ranks that a list of mesh axes names (the CPU Communicator's groups):
/// NCCL on GPUs, Gloo over host memory for the emulated device in tests.
/// Every call is queued on `stream`; values are f32.
class GpuCollectives {
public:
  virtual ~GpuCollectives() = default;
  /// In-place sum (or with `max`, maximum) of `count` floats at `data`
  /// over the group.
  virtual absl::Status allReduce(const std::vector<std::string> &axes,
                                 uint64_t data, size_t count, bool max,
                                 void *stream) = 0;
  /// Every member's `count` floats at `in`, in group order, into `out`.
  virtual absl::Status allGather(const std::vector<std::string> &axes,
                                 uint64_t in, uint64_t out, size_t count,
                                 void *stream) = 0;
  /// `in` holds group-size blocks of `count` floats; member j gets the sum
  /// over the group of block j in `out`.
  virtual absl::Status reduceScatter(const std::vector<std::string> &axes,
                                     uint64_t in, uint64_t out, size_t count,
                                     void *stream) = 0;
  /// `in` holds group-size blocks of `count` floats; block j goes to member
  /// j, whose `out` holds, in group order, the block each member sent it.
  virtual absl::Status allToAll(const std::vector<std::string> &axes,
                                uint64_t in, uint64_t out, size_t count,
                                void *stream) = 0;
  /// Sends the `bytes` at `in` to the member `delta` places on along
  /// `axis` (mod its size) and receives as many into `out` from the member
  /// `delta` places back, as one grouped exchange: every member of the
  /// ring does both, so none waits on itself. `tag` tells exchanges apart
  /// where the transport has tags.
  virtual absl::Status ringShift(const std::string &axis, int64_t delta,
                                 int64_t tag, uint64_t in, uint64_t out,
                                 size_t bytes, void *stream) = 0;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_GPUDEVICE_H

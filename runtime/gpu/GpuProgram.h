//===- GpuProgram.h - a sched program as GPU launches -----------*- C++ -*-===//
//
// What the GPU runtime queues for each instruction of a loaded bundle v2
// program: a generated kernel, a runtime library kernel (ops.cu,
// attention.cu), a cuBLASLt GEMM, a cuBLAS grouped GEMM (with the read of
// its group sizes back to the host), a memset or memcpy, a collective, or
// an event record or wait, each on the instruction's stream, with arguments
// that refer to the program's buffers. Nothing here decides anything the
// bundle did not: streams, events, scratch (the instructions' scratch
// operands, laid out as dialects/sched/IR/ScratchLayout.h says), the
// attention algorithm and the f32 copies of narrow values are the
// compiler's. What is left is mechanical: an instruction's fixed kernel
// sequence, grid sizes from its shapes, and the device's address of each
// buffer. GpuBackend binds these launches to device memory; tests check
// them on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_GPUPROGRAM_H
#define WEFT_RUNTIME_GPU_GPUPROGRAM_H

#include "runtime/dist/Mesh.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/gpu/GpuDevice.h"

#include "absl/status/statusor.h"

#include "absl/strings/string_view.h"
#include <string>
#include <vector>

namespace weft::runtime {

/// Device memory a launch reads or writes.
struct GpuBuffer {
  enum class Kind {
    Buffer, // A buffer of the program (`id`), `offset` bytes in.
    Error,  // The program's error word: {code, instruction, position, value}.
  };
  Kind kind = Kind::Buffer;
  int64_t id = 0;
  int64_t offset = 0;
  /// The bytes from `offset` the launch touches: a region of an
  /// instruction's scratch (0: the rest of the buffer). The runtime needs
  /// only the address; tests check that a kernel's grid covers its bytes.
  int64_t bytes = 0;
};

struct GpuArg {
  enum class Kind { Buffer, Null, I32, I64, F32, F64, Bytes };
  Kind kind = Kind::Null;
  GpuBuffer buffer;
  int64_t i = 0;
  double f = 0;
  std::string bytes; // A struct passed by value (OpsAbi.h).
};

enum class GpuCollective {
  AllReduce,    // In place, a sum.
  AllReduceMax, // In place.
  AllGather,
  ReduceScatter, // A sum.
  AllToAll,
  /// Send `bytes` to the member `delta` along the one axis and receive as
  /// many from the member -`delta`, grouped (ring attention's blocks).
  RingShift,
};

/// A grouped matmul's shape (weft.grouped_matmul, or with `wgrad` its
/// weight gradient). Forward: input [rows, k] in `groups` groups times
/// weight[g mod experts] ([experts, k, m], or [experts, m, k] with
/// `transposeRhs`) into out [rows, m], rows after the groups zeroed. Wgrad:
/// out[e] [k, m] sums lhs_g^T rhs_g (lhs [rows, k], rhs [rows, m]) over
/// e's groups.
struct GroupedGemmSpec {
  bool wgrad = false, transposeRhs = false;
  int64_t rows = 0, k = 0, m = 0, experts = 0, groups = 0;
};

struct GpuLaunch {
  /// HostRead copies a buffer of group sizes to host slot `slot`, once the
  /// launch's stream has computed it; GroupedGemm then sizes a cuBLAS
  /// grouped GEMM from that slot (neither can be captured in a graph).
  enum class Kind {
    Kernel,
    Gemm,
    Zero,
    Copy,
    Collective,
    Record,
    Wait,
    HostRead,
    GroupedGemm
  };
  Kind kind = Kind::Kernel;
  int64_t instruction = -1; // The program instruction it executes.
  int64_t stream = 0;       // Into the program's streams.
  int64_t event = 0;        // Record and Wait.
  /// Kernel: its name, grid and block; args are its parameters.
  std::string kernel;
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 256;
  /// Gemm: {A, B, C, bias, aux} (null where the epilogue has none).
  /// Zero: {target}. Copy: {to, from}. Collective: {in, out}.
  std::vector<GpuArg> args;
  GemmShape gemm;
  /// Zero and Copy: the bytes they set or move. A Kernel that touches only
  /// part of its buffers (an embedding's gather): the bytes it does read
  /// and write (tests check its grid covers them); 0: every buffer argument
  /// whole.
  int64_t bytes = 0;
  /// Collective: what, over the group of `axes`, `count` f32 per member;
  /// a RingShift moves `bytes` by `delta` along its one axis, with `tag`.
  GpuCollective collective = GpuCollective::AllReduce;
  std::vector<std::string> axes;
  int64_t count = 0, delta = 0, tag = 0;
  /// HostRead: `bytes` from {sizes} into the slot. GroupedGemm: args are
  /// {input or lhs, weight or rhs, out}, its sizes in the slot.
  int64_t slot = 0;
  GroupedGemmSpec grouped;
};

struct GpuProgram {
  std::vector<GpuLaunch> launches;
  /// Host slots of group sizes its HostReads fill: a program with any runs
  /// launch by launch, not as a CUDA graph.
  int64_t hostSlots = 0;
};

/// What a GroupedGemm launch queues for the group sizes `sizes` on its
/// operands' addresses {a, b, out}: first zero `zeroBytes` of out from
/// `zeroFrom` (the rows after the groups; a wgrad's whole out), then the
/// products, one per non-empty group. Sizes that are negative or overrun
/// the rows fail, naming the group, after `what`.
struct GroupedGemmWork {
  uint64_t zeroFrom = 0;
  size_t zeroBytes = 0;
  std::vector<GemmProblem> problems;
};
absl::StatusOr<GroupedGemmWork>
groupedGemmWork(const GroupedGemmSpec &spec, const int32_t *sizes, uint64_t a,
                uint64_t b, uint64_t out, absl::string_view what);

/// The launches of `program` (of `bundle`) for the rank at `rank` of
/// `mesh`. Fails, naming the instruction, on one the GPU runtime cannot run
/// (a bundle compiled for the CPU: no scratch where the GPU needs it, f32
/// copies the GPU does not make; FP8 GEMMs; point-to-point transfers).
absl::StatusOr<GpuProgram> gpuProgram(const sched::SchedBundle &bundle,
                                      const sched::Program &program,
                                      const MeshSpec &mesh, int64_t rank);

/// The kernel sources the GPU runtime compiles with NVRTC at load: ops.cu
/// (preceded by OpsAbi.h) and attention.cu, as built into the runtime.
const char *gpuOpsSource();
const char *gpuAttentionSource();

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_GPUPROGRAM_H

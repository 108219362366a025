//===- GpuPlan.h - a program's steps as GPU launches ------------*- C++ -*-===//
//
// What the GPU runtime will queue for each step of a bundle's program,
// decided without a device: which kernel (generated, ops.cu, attention.cu)
// or cuBLASLt GEMM, its launch shape, and its arguments as references to
// values, scratch buffers and scalars. GpuBackend turns a plan into device
// addresses and launches; tests check plans on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_GPUPLAN_H
#define WEFT_RUNTIME_GPU_GPUPLAN_H

#include "runtime/exec/Bundle.h"
#include "runtime/gpu/CublasLt.h"

#include "absl/status/statusor.h"

#include <map>
#include <string>
#include <vector>

namespace weft::runtime {

/// Device memory a launch reads or writes.
struct GpuBuffer {
  enum class Kind {
    Value,   // A program value (arena, parameter, constant or input).
    Scratch, // A step's temporary (row statistics, attention's scores, the
             // f32 copy of a narrow value for a kernel that computes in f32).
    Error,   // The program's error word: {code, step, position, value}.
  };
  Kind kind = Kind::Value;
  int64_t id = 0;
  int64_t offset = 0; // Bytes into it (a GEMM's sub-tensor).
};

struct GpuArg {
  enum class Kind { Buffer, Null, I32, I64, F32, F64, Bytes };
  Kind kind = Kind::Null;
  GpuBuffer buffer;
  int64_t i = 0;
  double f = 0;
  std::string bytes; // A struct passed by value (OpsAbi.h).
};

struct GpuLaunch {
  /// Record marks where a stream has got to in `event`; Wait holds a stream
  /// until another has passed the event.
  enum class Kind { Kernel, Gemm, Zero, Copy, Collective, Record, Wait };
  Kind kind = Kind::Kernel;
  int64_t step = -1; // The program step it belongs to.
  /// On the communication stream (a collective step's launches) rather
  /// than the compute stream.
  bool comm = false;
  int64_t event = 0; // Record and Wait.
  /// Kernel: the kernel's name, grid and block; args are its parameters.
  std::string kernel;
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 256;
  /// Gemm: {A, B, C, bias, aux} (null where the epilogue has none).
  /// Zero: {target}. Copy: {to, from}. Collective:
  /// {in, out} (all_reduce: {data, data}).
  std::vector<GpuArg> args;
  GemmShape gemm;
  /// Zero and Copy: the bytes they set or move. A Kernel that touches only
  /// part of its buffers (an embedding's gather): the bytes it does read
  /// and write, for launchCost; 0: every buffer argument whole.
  int64_t bytes = 0;
  /// Collective: "all_reduce" (a sum), "all_reduce_max", "all_gather",
  /// "reduce_scatter" or "all_to_all" of `count` floats per member over the
  /// group of `axes`
  /// (GpuCollectives).
  std::string collective;
  std::vector<std::string> axes;
  int64_t count = 0;
};

struct GpuProgramPlan {
  std::vector<GpuLaunch> launches;
  /// Where each scratch buffer lies in the scratch arena. A step's scratch
  /// is dead after it, so every step's lie from offset 0, and the arena is
  /// the largest step's.
  std::vector<int64_t> scratchOffsets;
  std::vector<int64_t> scratchBytes; // Each scratch buffer's size.
  int64_t scratchArenaBytes = 0;
  /// How many events the launches use.
  int64_t events = 0;
  /// Per value: the value whose storage it is (itself, or for a view of a
  /// parameter, constant or input, that value).
  std::vector<int64_t> storageOf;
};

struct GpuPlanOptions {
  /// This process's rank in the bundle's mesh (placed bundles).
  int64_t rank = 0;
  /// Attention runs as cuBLASLt GEMMs around a softmax kernel when its
  /// [B, Hq, S, T] scores and probabilities take at most this many bytes of
  /// scratch, else as the fused kernels of attention.cu (0: always fused).
  int64_t attentionScratchBytes = int64_t(4) << 30;
};

/// Plans program `name` of `bundle` for a GPU. Fails, naming the step, on
/// an op the GPU runtime cannot run (an elementwise op left unfused: the
/// bundle was not compiled with --target cuda; collectives; MoE routing).
absl::StatusOr<GpuProgramPlan> planGpuProgram(const Bundle &bundle,
                                              const std::string &name,
                                              GpuPlanOptions options = {});

/// What a launch moves through device memory and computes, for roofline
/// estimates and plan checks: every buffer argument read or written once
/// whole (a GEMM: its matrices, aux included; a kernel with `bytes` set:
/// those), a GEMM's FLOPs.
struct GpuLaunchCost {
  double bytes = 0, flops = 0;
  bool f32Gemm = false; // An f32 GEMM (no tensor cores: a lower peak).
};
GpuLaunchCost launchCost(const GpuLaunch &launch, const ProgramSpec &spec,
                         const GpuProgramPlan &plan);

/// The kernel sources the GPU runtime compiles with NVRTC at load: ops.cu
/// (preceded by OpsAbi.h) and attention.cu, as built into the runtime.
const char *gpuOpsSource();
const char *gpuAttentionSource();

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_GPUPLAN_H

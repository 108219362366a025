//===- GpuBackend.h - run a bundle v2's programs on a GPU -------*- C++ -*-===//
//
// The device half of SchedExecutor when it runs on a GPU: parameters,
// constants and one arena the rank's programs share (the largest size and
// alignment they state; another pipeline rank's programs and parameters
// are not held) in device memory, one device stream per stream the programs
// name, each program's launches (GpuProgram) bound once to device
// addresses and queued in program order on their streams, GEMMs through
// cuBLASLt, and from the second run on the whole program replayed as a
// CUDA graph (shapes are static), except a program whose grouped GEMMs read
// their sizes back to the host (experts), which runs launch by launch.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_GPUBACKEND_H
#define WEFT_RUNTIME_GPU_GPUBACKEND_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/gpu/GpuDevice.h"
#include "runtime/gpu/GpuProgram.h"

#include "absl/status/statusor.h"

#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

class GpuBackend {
public:
  struct Options {
    /// Replay programs as CUDA graphs after their first run (WEFT_CUDA_GRAPHS=0
    /// turns it off, for debugging a kernel).
    bool graphs = true;
    /// This process's rank in the bundle's mesh, and its collectives
    /// (not owned; required when the mesh has more than one rank).
    int64_t rank = 0;
    GpuCollectives *collectives = nullptr;
    /// For create(): the job's CPU communicator, through which a placed
    /// bundle's NCCL communicators are made when `collectives` is unset,
    /// and the GPU to open (its local rank).
    Communicator *comm = nullptr;
    int deviceOrdinal = 0;
  };
  /// Opens the GPU (options.deviceOrdinal), loads the bundle's kernels (its
  /// cubin for the GPU's architecture, else its CUDA source through NVRTC)
  /// and the runtime's own (NVRTC), makes a placed bundle's NCCL
  /// communicators, allocates the memory and binds the programs this rank
  /// runs (programsOfRank), in one arena they share. The
  /// backend keeps referring to `bundle`, which must outlive it.
  static absl::StatusOr<std::unique_ptr<GpuBackend>>
  create(const sched::SchedBundle &bundle, Options options);
  /// The same on `device`, whose kernels (the bundle's and the runtime's)
  /// are loaded, with `gemm` for the GEMMs: how tests run the GPU runtime
  /// on an emulated device.
  static absl::StatusOr<std::unique_ptr<GpuBackend>>
  createOn(const sched::SchedBundle &bundle, Options options,
           std::unique_ptr<GpuDevice> device, std::unique_ptr<GemmEngine> gemm);
  ~GpuBackend();

  /// The GPU's name and architecture ("NVIDIA H200 (sm_90)").
  std::string describe() const;

  /// Parameter `k` of the bundle (its bytes, as its type stores them) to
  /// and from the device.
  absl::Status uploadParam(size_t k, const void *bytes);
  absl::Status downloadParam(size_t k, void *bytes);

  /// Runs `program`; `inputs` are the bytes of each input, in order. Fails
  /// with the instruction and position when a kernel found bad data (a
  /// token id or label out of range).
  absl::Status run(const std::string &program,
                   const std::vector<const void *> &inputs);
  /// The bytes of buffer `buffer` of `program` after its last run; an
  /// error for an arena buffer once another program has run since.
  absl::StatusOr<std::vector<uint8_t>> bufferBytes(const std::string &program,
                                                   int64_t buffer);

private:
  struct Impl;
  GpuBackend() = default;
  std::unique_ptr<Impl> impl;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_GPUBACKEND_H

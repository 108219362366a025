//===- GpuBackend.h - run a bundle's programs on a GPU ----------*- C++ -*-===//
//
// The device half of the Executor when it runs on a GPU: parameters,
// constants and one arena per program (sized by the memory plan) in device
// memory from cuMemAlloc, every step queued on one stream as its
// GpuPlan says, the GEMMs through cuBLASLt, and from the second run on the
// whole program replayed as a CUDA graph (shapes are static).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_GPUBACKEND_H
#define WEFT_RUNTIME_GPU_GPUBACKEND_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/Bundle.h"
#include "runtime/gpu/GpuDevice.h"
#include "runtime/gpu/GpuPlan.h"

#include "absl/status/statusor.h"

#include <map>
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
    /// Where the rank sits (plan.rank) and how it talks to the others: a
    /// placed bundle's collectives (not owned; required when placed).
    GpuPlanOptions plan;
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
  /// communicators, allocates the memory and plans every program. `params`
  /// are the host parameters (their sizes are what is used). The backend
  /// keeps referring to `bundle`, which must outlive it.
  static absl::StatusOr<std::unique_ptr<GpuBackend>>
  create(const Bundle &bundle,
         const std::map<std::string, std::vector<float>> &params,
         Options options);
  /// The same on `device`, whose kernels (the bundle's and the runtime's)
  /// are loaded, with `gemm` for the GEMMs: how tests run the GPU runtime
  /// on an emulated device.
  static absl::StatusOr<std::unique_ptr<GpuBackend>>
  createOn(const Bundle &bundle,
           const std::map<std::string, std::vector<float>> &params,
           Options options, std::unique_ptr<GpuDevice> device,
           std::unique_ptr<GemmEngine> gemm);
  ~GpuBackend();

  /// The GPU's name and architecture ("NVIDIA H200 (sm_90)").
  std::string describe() const;

  absl::Status uploadParams(const std::map<std::string, std::vector<float>> &);
  absl::Status downloadParams(std::map<std::string, std::vector<float>> &);

  /// Runs `program`; `inputs` are the bytes of each input, in order. Fails
  /// with the step's op and position when a kernel found bad data (a token
  /// id or label out of range).
  absl::Status run(const std::string &program,
                   const std::vector<const void *> &inputs);
  /// Output `name` of the last run of `program`, as f32.
  absl::StatusOr<std::vector<float>> output(const std::string &program,
                                            const std::string &name);

private:
  struct Impl;
  GpuBackend() = default;
  std::unique_ptr<Impl> impl;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_GPUBACKEND_H

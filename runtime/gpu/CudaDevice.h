//===- CudaDevice.h - a GPU through the CUDA driver API ---------*- C++ -*-===//
//
// The runtime reaches the GPU through the CUDA driver API, loaded with
// dlopen (libcuda.so.1) when a device is asked for, so every binary builds,
// links and starts on machines without a GPU or driver; asking for a device
// there is an error that says so. Device memory comes from cuMemAlloc
// (never managed memory); cubins from `weftc compile --target cuda` load
// only on the architecture they were built for.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_CUDADEVICE_H
#define WEFT_RUNTIME_GPU_CUDADEVICE_H

#include "runtime/gpu/GpuDevice.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

struct CudaDriver;

class CudaDevice : public GpuDevice {
public:
  /// Opens GPU `ordinal` (its primary context). Fails with a message naming
  /// what is missing: the driver library, a device, or the ordinal.
  static absl::StatusOr<std::unique_ptr<CudaDevice>> open(int ordinal = 0);
  ~CudaDevice() override;

  const std::string &name() const override { return name_; }
  /// "sm_90" for compute capability 9.0.
  const std::string &arch() const override { return arch_; }

  /// Loads a cubin built for `arch` (sm_90, ...), refusing one built for
  /// another architecture.
  absl::Status loadCubin(const std::string &path, const std::string &arch);
  /// Loads a bundle's kernels: its cubin for this GPU's architecture
  /// (meta.cuda.cubins), else its CUDA source compiled now with NVRTC.
  absl::Status loadBundleKernels(const std::string &dir,
                                 const std::string &cubinForThisArch,
                                 const std::string &source);
  /// Loads a module image (cubin bytes) beside those loaded before.
  absl::Status loadImage(const std::string &image);
  absl::StatusOr<void *> function(const std::string &name) override;

  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override;
  absl::Status copyToDevice(DeviceBuffer to, const void *from,
                            size_t bytes) override;
  absl::Status copyToHost(void *to, DeviceBuffer from, size_t bytes) override;

  /// Launches `function` on `grid` x `block` threads with `args` (pointers
  /// to each argument's value) and waits for it.
  absl::Status launch(void *function, unsigned grid, unsigned block,
                      std::vector<void *> args);

  absl::StatusOr<void *> createStream() override;
  absl::Status launchAsync(void *function, const unsigned grid[3],
                           unsigned block, void **args, void *stream) override;
  absl::Status zeroAsync(uint64_t address, size_t bytes, void *stream) override;
  absl::Status copyAsync(uint64_t to, uint64_t from, size_t bytes,
                         void *stream) override;
  absl::Status synchronize(void *stream) override;
  absl::StatusOr<void *> createEvent() override;
  absl::Status record(void *event, void *stream) override;
  absl::Status wait(void *stream, void *event) override;
  absl::StatusOr<void *>
  capture(void *stream, const std::function<absl::Status()> &work) override;
  absl::Status replay(void *graph, void *stream) override;

private:
  CudaDevice() = default;
  absl::Status check(int result, const char *what) const;

  std::unique_ptr<CudaDriver> driver;
  int device = 0;
  void *context = nullptr;
  std::string name_, arch_;
  std::vector<void *> modules, streams, graphs, events;
  std::vector<DeviceBuffer> buffers;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_CUDADEVICE_H

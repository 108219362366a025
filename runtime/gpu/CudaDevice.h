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

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

struct CudaDriver;

/// Device memory; freed with its device.
struct DeviceBuffer {
  uint64_t address = 0;
  size_t bytes = 0;
};

class CudaDevice {
public:
  /// Opens GPU `ordinal` (its primary context). Fails with a message naming
  /// what is missing: the driver library, a device, or the ordinal.
  static absl::StatusOr<std::unique_ptr<CudaDevice>> open(int ordinal = 0);
  ~CudaDevice();

  const std::string &name() const { return name_; }
  /// "sm_90" for compute capability 9.0.
  const std::string &arch() const { return arch_; }

  /// Loads a cubin built for `arch` (sm_90, ...), refusing one built for
  /// another architecture.
  absl::Status loadCubin(const std::string &path, const std::string &arch);
  /// Loads a bundle's kernels: its cubin for this GPU's architecture
  /// (meta.cuda.cubins), else its CUDA source compiled now with NVRTC.
  absl::Status loadBundleKernels(const std::string &dir,
                                 const std::string &cubinForThisArch,
                                 const std::string &source);
  /// Loads a module image (cubin bytes).
  absl::Status loadImage(const std::string &image);
  /// A kernel of the loaded cubin.
  absl::StatusOr<void *> function(const std::string &name);

  /// `bytes` of device memory; running out is an error giving the free and
  /// total memory.
  absl::StatusOr<DeviceBuffer> allocate(size_t bytes);
  absl::Status copyToDevice(DeviceBuffer to, const void *from, size_t bytes);
  absl::Status copyToHost(void *to, DeviceBuffer from, size_t bytes);

  /// Launches `function` on `grid` x `block` threads with `args` (pointers
  /// to each argument's value) and waits for it.
  absl::Status launch(void *function, unsigned grid, unsigned block,
                      std::vector<void *> args);

private:
  CudaDevice() = default;
  absl::Status check(int result, const char *what) const;

  std::unique_ptr<CudaDriver> driver;
  int device = 0;
  void *context = nullptr;
  void *module = nullptr;
  std::string name_, arch_;
  std::vector<DeviceBuffer> buffers;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_CUDADEVICE_H

//===- CudaDevice.cpp - a GPU through the CUDA driver API -----------------===//

#include "runtime/gpu/CudaDevice.h"

#include "runtime/gpu/Nvrtc.h"

#include "absl/strings/str_cat.h"

#include "runtime/gpu/DynamicLibrary.h"

#include <fstream>
#include <iterator>

namespace weft::runtime {

// The driver API's few types, as cuda.h declares them, so building needs no
// CUDA headers.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr CUresult kOutOfMemory = 2;

/// The driver entry points, resolved from libcuda.so.1.
struct CudaDriver {
  DynamicLibrary library;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(void **, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(void *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(void **, const void *);
  CUresult (*cuModuleUnload)(void *);
  CUresult (*cuModuleGetFunction)(void **, void *, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, void *, void **,
                             void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuStreamCreate)(void **, unsigned);
  CUresult (*cuStreamDestroy)(void *);
  CUresult (*cuStreamSynchronize)(void *);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, void *);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, void *);
  CUresult (*cuStreamBeginCapture)(void *, int);
  CUresult (*cuStreamEndCapture)(void *, void **);
  CUresult (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
  CUresult (*cuGraphLaunch)(void *, void *);
  CUresult (*cuGraphExecDestroy)(void *);
  CUresult (*cuGraphDestroy)(void *);
  CUresult (*cuEventCreate)(void **, unsigned);
  CUresult (*cuEventDestroy)(void *);
  CUresult (*cuEventRecord)(void *, void *);
  CUresult (*cuStreamWaitEvent)(void *, void *, unsigned);

  absl::Status load() {
    if (!library.open({"libcuda.so.1"}))
      return absl::UnavailableError(
          "no CUDA driver on this machine (libcuda.so.1 not found); the GPU "
          "backend needs an NVIDIA GPU and its driver");
    auto bind = [&](auto &fn, const char *symbol) { library.bind(fn, symbol); };
    bind(cuInit, "cuInit");
    bind(cuDeviceGetCount, "cuDeviceGetCount");
    bind(cuDeviceGet, "cuDeviceGet");
    bind(cuDeviceGetName, "cuDeviceGetName");
    bind(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    bind(cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(cuCtxSynchronize, "cuCtxSynchronize");
    bind(cuModuleLoadData, "cuModuleLoadData");
    bind(cuModuleUnload, "cuModuleUnload");
    bind(cuModuleGetFunction, "cuModuleGetFunction");
    bind(cuMemAlloc, "cuMemAlloc_v2");
    bind(cuMemFree, "cuMemFree_v2");
    bind(cuMemGetInfo, "cuMemGetInfo_v2");
    bind(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    bind(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    bind(cuLaunchKernel, "cuLaunchKernel");
    bind(cuGetErrorString, "cuGetErrorString");
    bind(cuStreamCreate, "cuStreamCreate");
    bind(cuStreamDestroy, "cuStreamDestroy_v2");
    bind(cuStreamSynchronize, "cuStreamSynchronize");
    bind(cuMemsetD8Async, "cuMemsetD8Async");
    bind(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    bind(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    bind(cuStreamEndCapture, "cuStreamEndCapture");
    bind(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    bind(cuGraphLaunch, "cuGraphLaunch");
    bind(cuGraphExecDestroy, "cuGraphExecDestroy");
    bind(cuGraphDestroy, "cuGraphDestroy");
    bind(cuEventCreate, "cuEventCreate");
    bind(cuEventDestroy, "cuEventDestroy_v2");
    bind(cuEventRecord, "cuEventRecord");
    bind(cuStreamWaitEvent, "cuStreamWaitEvent");
    if (!library.allBound())
      return absl::UnavailableError(
          "the CUDA driver lacks an entry point Weft needs; update the driver");
    return absl::OkStatus();
  }
};

absl::Status CudaDevice::check(int result, const char *what) const {
  if (result == 0)
    return absl::OkStatus();
  const char *text = nullptr;
  driver->cuGetErrorString(result, &text);
  return absl::InternalError(absl::StrCat(
      what, " failed: ", text ? text : "unknown error", " (", result, ")"));
}

absl::StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  std::unique_ptr<CudaDevice> d(new CudaDevice);
  d->driver = std::make_unique<CudaDriver>();
  if (absl::Status s = d->driver->load(); !s.ok())
    return s;
  CudaDriver &cu = *d->driver;
  if (cu.cuInit(0) != 0)
    return absl::UnavailableError(
        "no CUDA device: the driver found no usable GPU (cuInit failed)");
  int count = 0;
  if (cu.cuDeviceGetCount(&count) != 0 || count == 0)
    return absl::UnavailableError("no CUDA device on this machine");
  if (ordinal < 0 || ordinal >= count)
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU ", ordinal, " does not exist (this machine has ", count, ")"));
  if (absl::Status s =
          d->check(cu.cuDeviceGet(&d->device, ordinal), "cuDeviceGet");
      !s.ok())
    return s;
  char name[256] = {};
  cu.cuDeviceGetName(name, sizeof(name) - 1, d->device);
  d->name_ = name;
  int major = 0, minor = 0;
  cu.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, d->device);
  cu.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, d->device);
  d->arch_ = absl::StrCat("sm_", major, minor);
  if (absl::Status s =
          d->check(cu.cuDevicePrimaryCtxRetain(&d->context, d->device),
                   "cuDevicePrimaryCtxRetain");
      !s.ok())
    return s;
  if (absl::Status s =
          d->check(cu.cuCtxSetCurrent(d->context), "cuCtxSetCurrent");
      !s.ok())
    return s;
  return d;
}

CudaDevice::~CudaDevice() {
  if (!driver || !context)
    return;
  driver->cuCtxSynchronize();
  for (void *g : graphs)
    driver->cuGraphExecDestroy(g);
  for (void *e : events)
    driver->cuEventDestroy(e);
  for (void *s : streams)
    driver->cuStreamDestroy(s);
  for (const DeviceBuffer &b : buffers)
    driver->cuMemFree(b.address);
  for (void *m : modules)
    driver->cuModuleUnload(m);
  driver->cuDevicePrimaryCtxRelease(device);
}

absl::Status CudaDevice::loadCubin(const std::string &path,
                                   const std::string &arch) {
  if (arch != arch_)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": built for ", arch, " but GPU 0 (", name_, ") is ", arch_,
        "; compile with weftc --target cuda --cuda-arch ", arch_));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  return loadImage(std::string((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>()));
}

absl::Status CudaDevice::loadImage(const std::string &image) {
  void *module = nullptr;
  if (absl::Status s = check(driver->cuModuleLoadData(&module, image.data()),
                             "loading the kernels");
      !s.ok())
    return s;
  modules.push_back(module);
  return absl::OkStatus();
}

absl::Status CudaDevice::loadBundleKernels(const std::string &dir,
                                           const std::string &cubin,
                                           const std::string &source) {
  if (!cubin.empty())
    return loadCubin(dir + "/" + cubin, arch_);
  std::ifstream in(dir + "/" + source);
  if (source.empty() || !in)
    return absl::NotFoundError(
        absl::StrCat(dir, ": no cubin for ", arch_,
                     " and no CUDA source; compile with weftc --target cuda"));
  absl::StatusOr<std::string> image =
      compileCudaSource(std::string((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>()),
                        arch_, dir + "/" + source);
  if (!image.ok())
    return image.status();
  return loadImage(*image);
}

absl::StatusOr<void *> CudaDevice::function(const std::string &name) {
  if (modules.empty())
    return absl::FailedPreconditionError("no kernels loaded");
  for (void *module : modules) {
    void *fn = nullptr;
    if (driver->cuModuleGetFunction(&fn, module, name.c_str()) == 0)
      return fn;
  }
  return absl::NotFoundError(
      absl::StrCat("no kernel '", name, "' in the loaded modules"));
}

absl::StatusOr<DeviceBuffer> CudaDevice::allocate(size_t bytes) {
  CUdeviceptr address = 0;
  CUresult result = driver->cuMemAlloc(&address, bytes ? bytes : 1);
  if (result == kOutOfMemory) {
    size_t free = 0, total = 0;
    driver->cuMemGetInfo(&free, &total);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of GPU memory: ", bytes, " bytes asked, ", free,
                     " of ", total, " free on ", name_));
  }
  if (absl::Status s = check(result, "cuMemAlloc"); !s.ok())
    return s;
  buffers.push_back({address, bytes});
  return buffers.back();
}

absl::Status CudaDevice::copyToDevice(DeviceBuffer to, const void *from,
                                      size_t bytes) {
  return check(driver->cuMemcpyHtoD(to.address, from, bytes), "copy to GPU");
}

absl::Status CudaDevice::copyToHost(void *to, DeviceBuffer from, size_t bytes) {
  return check(driver->cuMemcpyDtoH(to, from.address, bytes), "copy to host");
}

absl::Status CudaDevice::launch(void *function, unsigned grid, unsigned block,
                                std::vector<void *> args) {
  if (absl::Status s =
          check(driver->cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0,
                                       nullptr, args.data(), nullptr),
                "kernel launch");
      !s.ok())
    return s;
  return check(driver->cuCtxSynchronize(), "kernel run");
}

absl::StatusOr<void *> CudaDevice::createStream() {
  void *stream = nullptr;
  if (absl::Status s =
          check(driver->cuStreamCreate(&stream, 0), "cuStreamCreate");
      !s.ok())
    return s;
  streams.push_back(stream);
  return stream;
}

absl::Status CudaDevice::launchAsync(void *function, const unsigned grid[3],
                                     unsigned block, void **args,
                                     void *stream) {
  return check(driver->cuLaunchKernel(function, grid[0], grid[1], grid[2],
                                      block, 1, 1, 0, stream, args, nullptr),
               "kernel launch");
}

absl::Status CudaDevice::zeroAsync(uint64_t address, size_t bytes,
                                   void *stream) {
  return check(driver->cuMemsetD8Async(address, 0, bytes, stream),
               "cuMemsetD8Async");
}

absl::Status CudaDevice::copyAsync(uint64_t to, uint64_t from, size_t bytes,
                                   void *stream) {
  return check(driver->cuMemcpyDtoDAsync(to, from, bytes, stream),
               "device-to-device copy");
}

absl::Status CudaDevice::synchronize(void *stream) {
  return check(driver->cuStreamSynchronize(stream), "running the kernels");
}

absl::StatusOr<void *> CudaDevice::createEvent() {
  constexpr unsigned kDisableTiming = 2; // Cheaper, and all we need.
  void *event = nullptr;
  if (absl::Status s =
          check(driver->cuEventCreate(&event, kDisableTiming), "cuEventCreate");
      !s.ok())
    return s;
  events.push_back(event);
  return event;
}

absl::Status CudaDevice::record(void *event, void *stream) {
  return check(driver->cuEventRecord(event, stream), "cuEventRecord");
}

absl::Status CudaDevice::wait(void *stream, void *event) {
  return check(driver->cuStreamWaitEvent(stream, event, 0),
               "cuStreamWaitEvent");
}

absl::StatusOr<void *>
CudaDevice::capture(void *stream, const std::function<absl::Status()> &work) {
  // Relaxed mode: cuBLASLt may query the device while being captured.
  constexpr int kCaptureModeRelaxed = 2;
  if (absl::Status s =
          check(driver->cuStreamBeginCapture(stream, kCaptureModeRelaxed),
                "cuStreamBeginCapture");
      !s.ok())
    return s;
  absl::Status recorded = work();
  void *graph = nullptr;
  absl::Status ended =
      check(driver->cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  if (!recorded.ok() || !ended.ok()) {
    if (graph)
      driver->cuGraphDestroy(graph);
    return recorded.ok() ? ended : recorded;
  }
  void *exec = nullptr;
  absl::Status made =
      check(driver->cuGraphInstantiateWithFlags(&exec, graph, 0),
            "cuGraphInstantiate");
  driver->cuGraphDestroy(graph);
  if (!made.ok())
    return made;
  graphs.push_back(exec);
  return exec;
}

absl::Status CudaDevice::replay(void *graph, void *stream) {
  return check(driver->cuGraphLaunch(graph, stream), "cuGraphLaunch");
}

} // namespace weft::runtime

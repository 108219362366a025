//===- Nvrtc.cpp - compile CUDA source at load time -----------------------===//

#include "runtime/gpu/Nvrtc.h"

#include "absl/strings/str_cat.h"

#include "runtime/gpu/DynamicLibrary.h"

#include <memory>
#include <type_traits>

namespace weft::runtime {
namespace {
using nvrtcResult = int;
using nvrtcProgram = void *;

struct NvrtcLibrary {
  DynamicLibrary library;
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int,
                        const char *const *, const char *const *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*logSize)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*cubinSize)(nvrtcProgram, size_t *);
  nvrtcResult (*cubin)(nvrtcProgram, char *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  const char *(*errorString)(nvrtcResult);
};

absl::StatusOr<std::unique_ptr<NvrtcLibrary>> loadNvrtc() {
  auto lib = std::make_unique<NvrtcLibrary>();
  if (!lib->library.open({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}))
    return absl::UnavailableError(
        "NVRTC is not installed (libnvrtc.so); install the CUDA toolkit, or "
        "build the bundle for this GPU with weftc --target cuda --cuda-arch");
  DynamicLibrary &l = lib->library;
  l.bind(lib->create, "nvrtcCreateProgram");
  l.bind(lib->compile, "nvrtcCompileProgram");
  l.bind(lib->logSize, "nvrtcGetProgramLogSize");
  l.bind(lib->log, "nvrtcGetProgramLog");
  l.bind(lib->cubinSize, "nvrtcGetCUBINSize");
  l.bind(lib->cubin, "nvrtcGetCUBIN");
  l.bind(lib->destroy, "nvrtcDestroyProgram");
  l.bind(lib->errorString, "nvrtcGetErrorString");
  if (!l.allBound())
    return absl::UnavailableError(
        "libnvrtc.so lacks an entry point Weft needs");
  return lib;
}
} // namespace

absl::StatusOr<std::string> compileCudaSource(const std::string &source,
                                              const std::string &arch,
                                              const std::string &label) {
  absl::StatusOr<std::unique_ptr<NvrtcLibrary>> lib = loadNvrtc();
  if (!lib.ok())
    return lib.status();
  NvrtcLibrary &nvrtc = **lib;
  nvrtcProgram program = nullptr;
  if (nvrtc.create(&program, source.c_str(), label.c_str(), 0, nullptr,
                   nullptr) != 0)
    return absl::InternalError(absl::StrCat(label, ": NVRTC rejected it"));
  std::string target = "--gpu-architecture=" + arch;
  const char *options[] = {target.c_str(), "--fmad=false"};
  nvrtcResult result = nvrtc.compile(program, 2, options);
  if (result != 0) {
    size_t size = 0;
    nvrtc.logSize(program, &size);
    std::string log(size, '\0');
    nvrtc.log(program, log.data());
    nvrtc.destroy(&program);
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": compiling for ", arch, " failed (",
                     nvrtc.errorString(result), "):\n", log));
  }
  size_t size = 0;
  nvrtc.cubinSize(program, &size);
  std::string image(size, '\0');
  nvrtc.cubin(program, image.data());
  nvrtc.destroy(&program);
  return image;
}

} // namespace weft::runtime

//===- Blas.cpp - the CPU runtime's GEMM backend at the host's speed ------===//

#include "runtime/exec/Blas.h"

#include "absl/strings/str_cat.h"
#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace weft::runtime {
namespace {
/// Whether `core` is one of OpenBLAS's generic or pre-AVX2 x86 kernels.
bool isGenericCore(std::string_view core) {
  for (const char *generic :
       {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
        "Katmai", "Coppermine", "Northwood", "Banias", "Opteron", "Barcelona"})
    if (core == generic)
      return true;
  return false;
}

/// The environment's value of `name`, or "" when unset.
std::string_view env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

/// The core OpenBLAS runs on (as WEFT_TEST_BLAS_CORE says, in tests).
std::string detectedCore() {
  if (std::string_view test = env("WEFT_TEST_BLAS_CORE"); !test.empty())
    return std::string(test);
  const char *core = openblas_get_corename();
  return core ? core : "";
}
} // namespace

std::optional<std::string> preferredOpenBlasCore(std::string_view detected,
                                                 bool avx512, bool avx2Fma) {
  if (!isGenericCore(detected))
    return std::nullopt;
  if (avx512)
    return std::string("SkylakeX");
  if (avx2Fma)
    return std::string("Haswell");
  return std::nullopt;
}

void ensureOpenBlasKernels(char **argv) {
  // A choice already made (by the user, or by the run that started this
  // one) stands.
  if (!env("OPENBLAS_CORETYPE").empty())
    return;
#if defined(__x86_64__) || defined(__i386__)
  bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  bool avx2Fma =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  bool avx512 = false, avx2Fma = false;
#endif
  std::optional<std::string> better =
      preferredOpenBlasCore(detectedCore(), avx512, avx2Fma);
  if (!better)
    return;
  setenv("OPENBLAS_CORETYPE", better->c_str(), 1);
  setenv("WEFT_BLAS_CORE_CHOSEN", "1", 1); // For gemmBackend's line.
  unsetenv("WEFT_TEST_BLAS_CORE");
  execv("/proc/self/exe", argv);
  // Could not start again: run on, on the generic kernels (slower, right).
  unsetenv("OPENBLAS_CORETYPE");
}

std::string gemmBackend() {
  std::string config = openblas_get_config();
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": name and version.
  std::string version =
      config.substr(0, config.find(' ', config.find(' ') + 1));
  std::string who;
  if (env("WEFT_BLAS_CORE_CHOSEN") == "1")
    who = ", chosen by weft for this CPU (OpenBLAS's detection gave generic "
          "kernels)";
  else if (!env("OPENBLAS_CORETYPE").empty())
    who = ", from OPENBLAS_CORETYPE";
  return absl::StrCat(version, ", ", openblas_get_corename(), " kernels", who,
                      ", ", openblas_get_num_threads(), " threads");
}

} // namespace weft::runtime

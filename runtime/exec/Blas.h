//===- Blas.h - the CPU runtime's GEMM backend at the host's speed -*- C++
//-*-===//
//
// The CPU runtime's GEMMs are OpenBLAS's. Built with DYNAMIC_ARCH (Debian's
// is), OpenBLAS picks its kernels for the CPU it finds at load, but a
// release older than the CPU does not recognise it and falls back to its
// generic Prescott kernels: on an AVX-512 Xeon Debian's 0.3.21 then runs a
// 2048^3 sgemm at 31 GFLOP/s against 155 with its SkylakeX kernels. Nobody
// should need to know that, so the runtime checks at start-up and, when the
// kernels are generic but the CPU has AVX2 or AVX-512, starts itself again
// with OPENBLAS_CORETYPE naming the kernels the CPU can run (the variable
// is read only when the library loads). A core the user chose is kept.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_BLAS_H
#define WEFT_RUNTIME_EXEC_BLAS_H

#include <optional>
#include <string>
#include <string_view>

namespace weft::runtime {

/// The OpenBLAS kernels to ask for instead of `detected` (openblas's core
/// name) on a CPU with these features, or nullopt to keep them: only
/// generic or pre-AVX2 kernels are replaced, by SkylakeX with AVX-512
/// (F, BW, DQ, VL) or Haswell with AVX2 and FMA.
std::optional<std::string> preferredOpenBlasCore(std::string_view detected,
                                                 bool avx512, bool avx2Fma);

/// At the start of a tool's main: when OpenBLAS loaded generic kernels on
/// a CPU that has better ones and OPENBLAS_CORETYPE is unset, sets it and
/// executes the program again with `argv` (returning only if that fails).
/// WEFT_TEST_BLAS_CORE, when set, stands for the detected core (tests).
void ensureOpenBlasKernels(char **argv);

/// What the CPU runtime's GEMMs run on, for the first lines of a run:
/// "OpenBLAS 0.3.21, Zen kernels, 2 threads" (and who chose the kernels
/// when it was not OpenBLAS's own detection).
std::string gemmBackend();

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_BLAS_H

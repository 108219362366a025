//===- Epilogue.h - what a GEMM does to its product -------------*- C++ -*-===//
//
// weft.matmul_epilogue's kinds, shared by the CPU kernels and the GPU's
// cuBLASLt plans.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_EPILOGUE_H
#define WEFT_RUNTIME_SUPPORT_EPILOGUE_H

#include "runtime/support/ScalarMath.h"

#include <string_view>

namespace weft::runtime {

/// Add a bias vector (one value per output column) to every row; GELU (tanh
/// form) keeping its input in an aux matrix laid out as the output; with
/// both; or multiply by the GELU gradient at the aux matrix.
enum class GemmEpilogue { None, Bias, Gelu, BiasGelu, DGelu };

/// The epilogue's name in weft.matmul_epilogue ("none" for None).
inline const char *gemmEpilogueName(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Bias:
    return "bias";
  case GemmEpilogue::Gelu:
    return "gelu";
  case GemmEpilogue::BiasGelu:
    return "bias_gelu";
  case GemmEpilogue::DGelu:
    return "dgelu";
  }
  return "none";
}

/// The epilogue named `name`; None for any other name.
inline GemmEpilogue gemmEpilogueNamed(std::string_view name) {
  for (GemmEpilogue e : {GemmEpilogue::Bias, GemmEpilogue::Gelu,
                         GemmEpilogue::BiasGelu, GemmEpilogue::DGelu})
    if (name == gemmEpilogueName(e))
      return e;
  return GemmEpilogue::None;
}

/// Which of its optional operands and results an epilogue has: a bias
/// vector operand, the aux matrix (a result for the GELU kinds, an operand
/// for DGelu).
inline bool epilogueHasBias(GemmEpilogue e) {
  return e == GemmEpilogue::Bias || e == GemmEpilogue::BiasGelu;
}
inline bool epilogueHasAux(GemmEpilogue e) {
  return e == GemmEpilogue::Gelu || e == GemmEpilogue::BiasGelu ||
         e == GemmEpilogue::DGelu;
}

/// One element of epilogue `e` on a product element `acc` (already in the
/// accumulator's precision): `bias` is its column's bias (the Bias kinds),
/// `pre` the GELU input the forward kept (DGelu), and `round` rounds the
/// biased sum as the accumulator does (to f32). Returns the result; the GELU
/// kinds set *aux to the GELU input. The one statement of what
/// weft.matmul_epilogue computes, for the evaluator, the CPU kernel, and the
/// emulated and on-device checks of cuBLASLt.
template <typename Round>
double epilogueElement(GemmEpilogue e, double acc, double bias, double pre,
                       double *aux, Round round) {
  double x = epilogueHasBias(e) ? round(acc + bias) : acc;
  switch (e) {
  case GemmEpilogue::Gelu:
  case GemmEpilogue::BiasGelu:
    *aux = x;
    return gelu(x);
  case GemmEpilogue::DGelu:
    return geluGrad(pre, x);
  case GemmEpilogue::None:
  case GemmEpilogue::Bias:
    break;
  }
  return x;
}

/// Rounds to f32, the accumulator type of every Weft GEMM.
inline double roundToF32(double x) { return static_cast<float>(x); }

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_EPILOGUE_H

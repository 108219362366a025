//===- Epilogue.h - what a GEMM does to its product -------------*- C++ -*-===//
//
// weft.matmul_epilogue's kinds, shared by the CPU kernels and the GPU's
// cuBLASLt plans.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_EPILOGUE_H
#define WEFT_RUNTIME_SUPPORT_EPILOGUE_H

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

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_EPILOGUE_H

//===- ScalarMath.h - the scalar functions of weft's activations -*- C++
//-*-===//
//
// One definition, in double, shared by the reference evaluator and the CPU
// runtime's kernels, so both compute the same value for every element.
// (Generated kernels are compiled standalone and carry their own copy in the
// codegen prelude, codegen/KernelSource.cpp; the parity tests hold the three
// together.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_SCALARMATH_H
#define WEFT_RUNTIME_SUPPORT_SCALARMATH_H

#include <cmath>

namespace weft::runtime {

/// GELU, tanh form (GPT-2's gelu_new).
inline double gelu(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// dy * gelu'(x): d/dx of 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3).
inline double geluGrad(double x, double dy) {
  double c = std::sqrt(2.0 / M_PI);
  double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return dy * (0.5 * (1.0 + t) +
               0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x));
}

inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

/// dy * silu'(x) = dy * s (1 + x (1 - s)), s = sigmoid(x).
inline double siluGrad(double x, double dy) {
  double s = 1.0 / (1.0 + std::exp(-x));
  return dy * s * (1.0 + x * (1.0 - s));
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_SCALARMATH_H

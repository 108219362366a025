//===- HalfFloat.h - f16 rounding and widening, C++ and CUDA ----*- C++ -*-===//
//
// IEEE binary16 from f32 (round to nearest even on the bits, subnormals,
// overflow to infinity, NaN as the canonical 0x7E00) and back (exact).
// Plain C, as Fp8Scaling.h is (whose bit casts it uses), so the CPU runtime
// (Float.h), ops.cu (under nvcc and NVRTC) and the test emulator share one
// definition.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_HALFFLOAT_H
#define WEFT_RUNTIME_SUPPORT_HALFFLOAT_H

// Fp8Scaling.h's bit casts and rounding (the GPU runtime's embedded kernel
// source has it ahead of this file).
#ifndef WEFT_RUNTIME_SUPPORT_FP8SCALING_H
#include "Fp8Scaling.h"
#endif
#define WEFT_F16_FN WEFT_FP8_FN

/// The f16 bits nearest `x` (ties to even).
WEFT_F16_FN unsigned short weft_f16_bits(float x) {
  unsigned u = weft_fp8_bits_of(x);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u)
    return 0x7E00; // NaN.
  if (u >= 0x477FF000u)
    return sign | 0x7C00; // 65520 and up (the tie with 65536) round to inf.
  if (u < 0x38800000u) {
    // Below 2^-14: subnormal, a count of 2^-24 quanta. |x| * 2^24 is exact
    // and under 1024; rounding it to an integer (ties to even, the default
    // mode) gives the count, 1024 carrying into the smallest normal's bits.
    float quanta = weft_fp8_float_of(u) * 16777216.0f;
    return sign | (unsigned short)weft_fp8_rint(quanta);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 bits dropped
  // to nearest even; a carry moves into the exponent as it should.
  u -= (127u - 15u) << 23;
  u += 0xFFFu + ((u >> 13) & 1u);
  return sign | (unsigned short)(u >> 13);
}

/// The f32 an f16 holds (exactly; a NaN keeps its payload).
WEFT_F16_FN float weft_f16_value(unsigned short bits) {
  unsigned sign = (unsigned)(bits & 0x8000u) << 16;
  unsigned exp = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
  if (exp == 0x1F) // Infinity or NaN.
    return weft_fp8_float_of(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) // Zero or subnormal: mant quanta of 2^-24.
    return weft_fp8_float_of(
        sign | weft_fp8_bits_of((float)mant * (1.0f / 16777216.0f)));
  return weft_fp8_float_of(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

#endif // WEFT_RUNTIME_SUPPORT_HALFFLOAT_H

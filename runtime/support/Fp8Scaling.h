//===- Fp8Scaling.h - FP8 block scales and rounding, C++ and CUDA -*- C++
//-*-===//
//
// weft.fp8_quantize's arithmetic (see its description in WeftOps.td): the
// scale of a block from its amax and the FP8 rounding of a scaled value,
// returned as the f32 it stands for. Plain C, as CounterRng.h is, so the
// CPU executor, ops.cu (under nvcc and NVRTC) and the test emulator share
// one definition; the reference evaluator rounds with APFloat instead.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_FP8SCALING_H
#define WEFT_RUNTIME_SUPPORT_FP8SCALING_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_FP8_FN static __host__ __device__ inline
#else
#include <cmath>
#include <cstring>
#define WEFT_FP8_FN static inline
#endif

/// Rounds to an integer, ties to even (the default rounding mode).
WEFT_FP8_FN float weft_fp8_rint(float x) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return rintf(x);
#else
  return std::nearbyint(x);
#endif
}

WEFT_FP8_FN unsigned weft_fp8_bits_of(float x) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return __float_as_uint(x);
#else
  unsigned u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

WEFT_FP8_FN float weft_fp8_float_of(unsigned u) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

/// The largest finite value: 448 (E4M3FN) or 57344 (E5M2).
WEFT_FP8_FN float weft_fp8_largest(int e4m3) {
  return e4m3 ? 448.0f : 57344.0f;
}

/// The scale of a block whose largest magnitude is `amax`: F / max(amax,
/// 1e-12), or with `pow2` the E8M0 power of two 2^(E - floor(log2 amax))
/// (E = 8 or 15, the exponent clamped to [-127, 127]). NaN for a NaN or
/// infinite amax, so the block quantizes to NaN.
WEFT_FP8_FN float weft_fp8_scale(float amax, int e4m3, int pow2) {
  if (!(amax <= 3.4028234663852886e38f))
    return weft_fp8_float_of(0x7FC00000u);
  if (amax < 1e-12f)
    amax = 1e-12f;
  if (!pow2)
    return weft_fp8_largest(e4m3) / amax;
  // amax is a normal float here: floor(log2) is its biased exponent - 127.
  int exponent = (int)((weft_fp8_bits_of(amax) >> 23) & 0xFFu) - 127;
  int shift = (e4m3 ? 8 : 15) - exponent;
  shift = shift < -127 ? -127 : shift > 127 ? 127 : shift;
  // 2^shift: a normal float's bits from 2^-126 up; 2^-127 is subnormal.
  return shift == -127 ? weft_fp8_float_of(0x00400000u)
                       : weft_fp8_float_of((unsigned)(shift + 127) << 23);
}

/// x saturated to the format's finite range and rounded to it, to nearest
/// with ties to even (subnormals included), as an f32. NaN stays NaN.
WEFT_FP8_FN float weft_fp8_round(float x, int e4m3) {
  float largest = weft_fp8_largest(e4m3);
  if (!(x == x))
    return x;
  if (x > largest)
    x = largest;
  if (x < -largest)
    x = -largest;
  unsigned u = weft_fp8_bits_of(x), sign = u & 0x80000000u;
  u &= 0x7FFFFFFFu;
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  unsigned minNormal = (unsigned)(127 + 1 - bias) << 23;
  if (u < minNormal) {
    // Below the smallest normal the quantum is fixed, 2^(1 - bias -
    // mantissa): count quanta (an exact scaling by a power of two), round
    // the count to nearest even, scale back.
    float quanta = weft_fp8_rint(
        weft_fp8_float_of(u) *
        weft_fp8_float_of((unsigned)(127 + bias - 1 + mantissa) << 23));
    float value = quanta * weft_fp8_float_of(
                               (unsigned)(127 - (bias - 1 + mantissa)) << 23);
    return weft_fp8_float_of(weft_fp8_bits_of(value) | sign);
  }
  // A normal: round the f32 mantissa to `mantissa` bits, ties to even; a
  // carry moves into the exponent, as it should.
  int drop = 23 - mantissa;
  u += (1u << (drop - 1)) - 1u + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  return weft_fp8_float_of(u | sign);
}

/// One element of a block with scale `scale`: fp8(x * scale) / scale.
WEFT_FP8_FN float weft_fp8_quantize(float x, float scale, int e4m3) {
  return weft_fp8_round(x * scale, e4m3) / scale;
}

/// The FP8 code of fp8(x * scale) (weft_fp8_round's value, so only
/// exact encoding is left): sign, biased exponent and mantissa, or a count
/// of the smallest subnormal for values below the smallest normal; NaN is
/// 0x7F (E4M3FN) or 0x7E (E5M2), as runtime::fp8Bits writes it.
WEFT_FP8_FN unsigned char weft_fp8_code(float x, float scale, int e4m3) {
  float r = weft_fp8_round(x * scale, e4m3);
  unsigned u = weft_fp8_bits_of(r), sign = (u >> 24) & 0x80u;
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u)
    return (unsigned char)(e4m3 ? 0x7F : 0x7E);
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  unsigned minNormal = (unsigned)(127 + 1 - bias) << 23;
  if (u < minNormal) // An exact count of quanta 2^(1 - bias - mantissa).
    return (unsigned char)(sign |
                           (unsigned)(weft_fp8_float_of(u) *
                                      weft_fp8_float_of(
                                          (unsigned)(127 + bias - 1 + mantissa)
                                          << 23)));
  unsigned exponent = (u >> 23) - 127 + bias,
           fraction = (u >> (23 - mantissa)) & ((1u << mantissa) - 1u);
  return (unsigned char)(sign | (exponent << mantissa) | fraction);
}

#endif // WEFT_RUNTIME_SUPPORT_FP8SCALING_H

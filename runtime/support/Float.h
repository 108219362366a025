//===- Float.h - element types, narrow-float rounding and encoding -*- C++
//-*-===//
//
// The element types Weft stores (safetensors' names) and exact conversions
// between them and double: round-to-nearest-even into bf16, f16 and the two
// FP8 formats, and their bit encodings. The reference evaluator emulates
// narrow types with roundTo(); checkpoints use encode()/decode().
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_FLOAT_H
#define WEFT_RUNTIME_SUPPORT_FLOAT_H

#include "runtime/support/HalfFloat.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace weft::runtime {

enum class DType {
  F64,
  F32,
  BF16,
  F16,
  F8E4M3FN,
  F8E5M2,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  Bool
};

/// Bytes per element.
size_t dtypeSize(DType type);
/// The safetensors name ("F32", "BF16", "F8_E4M3", ...).
std::string_view dtypeName(DType type);
/// Parses a safetensors dtype name.
std::optional<DType> dtypeFromName(std::string_view name);
bool isFloatingPoint(DType type);
/// The FP8 formats: f8E4M3FN or f8E5M2.
inline bool isFp8(DType type) {
  return type == DType::F8E4M3FN || type == DType::F8E5M2;
}
/// bf16 or f16: the types kernels compute in f32 and round back to.
inline bool isNarrowFloat(DType type) {
  return type == DType::BF16 || type == DType::F16;
}

/// Rounds `x` to the nearest value of floating-point type `type`, ties to
/// even, with the type's overflow rule (infinity, or NaN for F8E4M3FN which
/// has no infinity). Integer types round toward zero. F64 returns x.
double roundTo(double x, DType type);

/// The bf16 bits of roundTo(x, BF16) for a float `x`: round to nearest
/// even on the bits (subnormals and overflow to infinity included), a NaN
/// as encode() writes it (the canonical quiet NaN 0x7FC0). What narrow
/// models' copies run per element, so it is integer work, not encode's
/// general rounding through double.
inline uint16_t bf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
/// The float a bf16 holds (exact: bf16 is f32's top half).
inline float bf16Value(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

/// The same for f16: the bits of roundTo(x, F16) for a float `x` (round to
/// nearest even on the bits; NaN as the canonical 0x7E00), and the float an
/// f16 holds, exactly (HalfFloat.h, which the GPU kernels share).
inline uint16_t f16Bits(float x) { return weft_f16_bits(x); }
inline float f16Value(uint16_t bits) { return weft_f16_value(bits); }

/// The FP8 formats the same way: the bits of roundTo(x, F8E4M3FN or
/// F8E5M2) for a float `x`, on the bits (E4M3FN has no infinity: past 464,
/// the tie with the NaN slot, it is NaN 0x7F; E5M2 overflows to infinity
/// from 61440), and the float a byte of either holds (a table).
uint8_t fp8Bits(float x, DType type);
float fp8Value(uint8_t bits, DType type);

/// Reads one little-endian element at `bytes` as a double (exactly).
double decode(const uint8_t *bytes, DType type);
/// Writes roundTo(x, type) as one little-endian element at `bytes`.
void encode(double x, DType type, uint8_t *bytes);
/// The `count` elements of `type` at `bytes`, as floats (a program's
/// output, whatever its element type).
std::vector<float> decodeAll(const void *bytes, int64_t count, DType type);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_FLOAT_H

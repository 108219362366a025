//===- Float.cpp - narrow-float rounding and encoding ---------------------===//

#include "runtime/support/Float.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace weft::runtime {
namespace {

/// A binary floating-point format with an implicit leading bit.
struct Format {
  int expBits;
  int mantBits;
  /// IEEE formats reserve the top exponent for inf/NaN; "FN" formats
  /// (F8E4M3FN) use it for numbers and keep only all-ones as NaN.
  bool ieee;

  int bias() const { return (1 << (expBits - 1)) - 1; }
  int minExp() const { return 1 - bias(); }
  int maxExp() const { return (1 << expBits) - (ieee ? 2 : 1) - bias(); }
  double maxFinite() const {
    // FN formats lose the all-ones mantissa at the top exponent to NaN.
    double mant = ieee ? 2.0 - std::ldexp(1.0, -mantBits)
                       : 2.0 - std::ldexp(1.0, 1 - mantBits);
    return std::ldexp(mant, maxExp());
  }
};

std::optional<Format> formatOf(DType type) {
  switch (type) {
  case DType::F32:
    return Format{8, 23, true};
  case DType::BF16:
    return Format{8, 7, true};
  case DType::F16:
    return Format{5, 10, true};
  case DType::F8E4M3FN:
    return Format{4, 3, false};
  case DType::F8E5M2:
    return Format{5, 2, true};
  default:
    return std::nullopt;
  }
}

double roundToFormat(double x, const Format &f) {
  if (std::isnan(x))
    return x;
  if (std::isinf(x))
    return f.ieee ? x : std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0)
    return x;
  int e;
  std::frexp(x, &e); // |x| = m * 2^e, m in [0.5, 1): leading bit is 2^(e-1).
  int quantumExp = std::max(e - 1, f.minExp()) - f.mantBits;
  // Scaling by a power of two is exact, so nearbyint (ties to even in the
  // default rounding mode) rounds exactly once.
  double r = std::ldexp(std::nearbyint(std::ldexp(x, -quantumExp)), quantumExp);
  if (std::fabs(r) > f.maxFinite())
    return f.ieee ? std::copysign(std::numeric_limits<double>::infinity(), x)
                  : std::numeric_limits<double>::quiet_NaN();
  return r;
}

uint32_t encodeFormat(double x, const Format &f) {
  uint32_t signBit = 1u << (f.expBits + f.mantBits);
  uint32_t expMask = (1u << f.expBits) - 1;
  double r = roundToFormat(x, f);
  if (std::isnan(r)) // Canonical quiet NaN: top mantissa bit (all bits if FN).
    return (expMask << f.mantBits) |
           (f.ieee ? 1u << (f.mantBits - 1) : (1u << f.mantBits) - 1);
  uint32_t sign = std::signbit(r) ? signBit : 0;
  r = std::fabs(r);
  if (std::isinf(r))
    return sign | (expMask << f.mantBits);
  if (r == 0.0)
    return sign;
  int e;
  std::frexp(r, &e);
  int exp = e - 1;
  if (exp < f.minExp()) // Subnormal: mantissa counts quanta of 2^(minExp-mant).
    return sign | static_cast<uint32_t>(std::ldexp(r, f.mantBits - f.minExp()));
  auto mant =
      static_cast<uint32_t>(std::ldexp(std::ldexp(r, -exp) - 1.0, f.mantBits));
  return sign | (static_cast<uint32_t>(exp + f.bias()) << f.mantBits) | mant;
}

double decodeFormat(uint32_t bits, const Format &f) {
  uint32_t mant = bits & ((1u << f.mantBits) - 1);
  uint32_t exp = (bits >> f.mantBits) & ((1u << f.expBits) - 1);
  bool negative = (bits >> (f.expBits + f.mantBits)) & 1;
  uint32_t expMax = (1u << f.expBits) - 1;
  double value;
  if (f.ieee && exp == expMax)
    value = mant ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else if (!f.ieee && exp == expMax && mant == (1u << f.mantBits) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (exp == 0)
    value = std::ldexp(static_cast<double>(mant), f.minExp() - f.mantBits);
  else
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.mantBits),
                       static_cast<int>(exp) - f.bias());
  return negative ? -value : value;
}

template <typename T> T load(const uint8_t *bytes) {
  T v;
  std::memcpy(&v, bytes, sizeof(T)); // Little-endian hosts only (x86, arm64).
  return v;
}
template <typename T> void store(T v, uint8_t *bytes) {
  std::memcpy(bytes, &v, sizeof(T));
}
} // namespace

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::BF16:
  case DType::F16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::F8E4M3FN:
  case DType::F8E5M2:
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 0;
}

namespace {
struct NamedDType {
  std::string_view name;
  DType type;
};
constexpr NamedDType kNames[] = {
    {"F64", DType::F64},          {"F32", DType::F32},
    {"BF16", DType::BF16},        {"F16", DType::F16},
    {"F8_E4M3", DType::F8E4M3FN}, {"F8_E5M2", DType::F8E5M2},
    {"I64", DType::I64},          {"I32", DType::I32},
    {"I16", DType::I16},          {"I8", DType::I8},
    {"U64", DType::U64},          {"U32", DType::U32},
    {"U16", DType::U16},          {"U8", DType::U8},
    {"BOOL", DType::Bool}};
} // namespace

std::string_view dtypeName(DType type) {
  for (const NamedDType &n : kNames)
    if (n.type == type)
      return n.name;
  return "?";
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const NamedDType &n : kNames)
    if (n.name == name)
      return n.type;
  return std::nullopt;
}

bool isFloatingPoint(DType type) {
  return type == DType::F64 || formatOf(type).has_value();
}

double roundTo(double x, DType type) {
  if (type == DType::F64)
    return x;
  if (type == DType::F32) // Hardware conversion rounds to nearest even.
    return static_cast<double>(static_cast<float>(x));
  if (std::optional<Format> f = formatOf(type))
    return roundToFormat(x, *f);
  if (type == DType::Bool)
    return x != 0.0 ? 1.0 : 0.0;
  return std::trunc(x);
}

uint8_t fp8Bits(float x, DType type) {
  bool e4m3 = type == DType::F8E4M3FN;
  // E4M3FN: bias 7, 3 mantissa bits, normals from 2^-6, NaN 0x7F (no sign).
  // E5M2: bias 15, 2 mantissa bits, normals from 2^-14, NaN 0x7E.
  int mantBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  auto sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7FFFFFFFu;
  uint8_t nan = e4m3 ? 0x7F : 0x7E;
  if (u > 0x7F800000u)
    return nan;
  if (e4m3 ? u > 0x43E80000u   // Past 464: NaN (no infinity).
           : u >= 0x47700000u) // 61440 and up: infinity.
    return e4m3 ? nan : static_cast<uint8_t>(sign | 0x7C);
  auto minNormal = static_cast<uint32_t>(127 + 1 - bias) << 23;
  if (u < minNormal) {
    // Subnormal: a count of 2^(1 - bias - mantBits) quanta, exactly scaled
    // and rounded to nearest even (the top count carries into the
    // smallest normal's bits).
    float quanta =
        std::nearbyint(std::ldexp(std::fabs(x), bias - 1 + mantBits));
    return sign | static_cast<uint8_t>(quanta);
  }
  int drop = 23 - mantBits;
  u -= static_cast<uint32_t>(127 - bias) << 23;
  u += (1u << (drop - 1)) - 1 + ((u >> drop) & 1u);
  return sign | static_cast<uint8_t>(u >> drop);
}

float fp8Value(uint8_t bits, DType type) {
  // Every byte, decoded once per format by the general (exact) decoder.
  static const auto tables = [] {
    std::array<std::array<float, 256>, 2> t{};
    for (int b = 0; b < 256; ++b) {
      t[0][b] = static_cast<float>(
          decodeFormat(static_cast<uint32_t>(b), *formatOf(DType::F8E4M3FN)));
      t[1][b] = static_cast<float>(
          decodeFormat(static_cast<uint32_t>(b), *formatOf(DType::F8E5M2)));
    }
    return t;
  }();
  return tables[type == DType::F8E4M3FN ? 0 : 1][bits];
}

double decode(const uint8_t *bytes, DType type) {
  switch (type) {
  case DType::F64:
    return load<double>(bytes);
  case DType::F32:
    return load<float>(bytes);
  case DType::BF16:
    return bf16Value(load<uint16_t>(bytes));
  case DType::F16:
    return f16Value(load<uint16_t>(bytes));
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return fp8Value(bytes[0], type);
  case DType::I64:
    return static_cast<double>(load<int64_t>(bytes));
  case DType::I32:
    return load<int32_t>(bytes);
  case DType::I16:
    return load<int16_t>(bytes);
  case DType::I8:
    return static_cast<int8_t>(bytes[0]);
  case DType::U64:
    return static_cast<double>(load<uint64_t>(bytes));
  case DType::U32:
    return load<uint32_t>(bytes);
  case DType::U16:
    return load<uint16_t>(bytes);
  case DType::U8:
    return bytes[0];
  case DType::Bool:
    return bytes[0] ? 1.0 : 0.0;
  }
  return 0.0;
}

void encode(double x, DType type, uint8_t *bytes) {
  switch (type) {
  case DType::F64:
    return store<double>(x, bytes);
  case DType::F32:
    return store<float>(static_cast<float>(x), bytes);
  case DType::BF16:
  case DType::F16:
    // A float (what programs hold) rounds on its bits; a double between
    // floats must round once, from the double.
    if (static_cast<double>(static_cast<float>(x)) == x || std::isnan(x))
      return store<uint16_t>(type == DType::BF16
                                 ? bf16Bits(static_cast<float>(x))
                                 : f16Bits(static_cast<float>(x)),
                             bytes);
    return store<uint16_t>(
        static_cast<uint16_t>(encodeFormat(x, *formatOf(type))), bytes);
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    if (static_cast<double>(static_cast<float>(x)) == x || std::isnan(x))
      bytes[0] = fp8Bits(static_cast<float>(x), type);
    else
      bytes[0] = static_cast<uint8_t>(encodeFormat(x, *formatOf(type)));
    return;
  case DType::I64:
    return store<int64_t>(static_cast<int64_t>(x), bytes);
  case DType::I32:
    return store<int32_t>(static_cast<int32_t>(x), bytes);
  case DType::I16:
    return store<int16_t>(static_cast<int16_t>(x), bytes);
  case DType::I8:
    bytes[0] = static_cast<uint8_t>(static_cast<int8_t>(x));
    return;
  case DType::U64:
    return store<uint64_t>(static_cast<uint64_t>(x), bytes);
  case DType::U32:
    return store<uint32_t>(static_cast<uint32_t>(x), bytes);
  case DType::U16:
    return store<uint16_t>(static_cast<uint16_t>(x), bytes);
  case DType::U8:
    bytes[0] = static_cast<uint8_t>(x);
    return;
  case DType::Bool:
    bytes[0] = x != 0.0;
    return;
  }
}

std::vector<float> decodeAll(const void *bytes, int64_t count, DType type) {
  std::vector<float> out(count);
  if (type == DType::F32) {
    std::memcpy(out.data(), bytes, count * sizeof(float));
    return out;
  }
  const auto *at = static_cast<const uint8_t *>(bytes);
  size_t width = dtypeSize(type);
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<float>(decode(at + i * width, type));
  return out;
}

} // namespace weft::runtime

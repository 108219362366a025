//===- float_test.cpp - narrow-float rounding against llvm::APFloat -------===//
//
// The runtime cannot use LLVM, so its conversions are checked here against
// APFloat, exhaustively for every 8- and 16-bit pattern.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/BundleData.h"
#include "runtime/support/Float.h"

#include "llvm/ADT/APFloat.h"
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using weft::runtime::DType;

namespace {
struct Case {
  DType type;
  const llvm::fltSemantics &(*semantics)();
  int bits;
};
const Case kCases[] = {
    {DType::BF16, llvm::APFloat::BFloat, 16},
    {DType::F16, llvm::APFloat::IEEEhalf, 16},
    {DType::F8E4M3FN, llvm::APFloat::Float8E4M3FN, 8},
    {DType::F8E5M2, llvm::APFloat::Float8E5M2, 8},
};

double apDecode(const Case &c, uint32_t bits) {
  llvm::APFloat f(c.semantics(), llvm::APInt(c.bits, bits));
  bool lost;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

uint32_t apEncode(const Case &c, double x) {
  llvm::APFloat f(x);
  bool lost;
  f.convert(c.semantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint32_t>(f.bitcastToAPInt().getZExtValue());
}

/// Calls `fn` on a million floats spread evenly over every bit pattern
/// (NaNs, infinities and subnormals among them).
template <typename Fn> void forSpreadFloats(Fn fn) {
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4099) {
    float x;
    uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b, sizeof(x));
    fn(x);
  }
}

uint32_t ourEncode(const Case &c, double x) {
  uint8_t bytes[2] = {0, 0};
  weft::runtime::encode(x, c.type, bytes);
  return bytes[0] | (c.bits == 16 ? bytes[1] << 8 : 0);
}
} // namespace

TEST(Float, DecodeMatchesAPFloatForEveryBitPattern) {
  for (const Case &c : kCases) {
    for (uint32_t bits = 0; bits < (1u << c.bits); ++bits) {
      uint8_t bytes[2] = {static_cast<uint8_t>(bits),
                          static_cast<uint8_t>(bits >> 8)};
      double ours = weft::runtime::decode(bytes, c.type);
      double theirs = apDecode(c, bits);
      if (std::isnan(theirs)) {
        EXPECT_TRUE(std::isnan(ours)) << "bits " << bits;
        continue;
      }
      ASSERT_EQ(ours, theirs)
          << weft::runtime::dtypeName(c.type) << " bits " << bits;
      ASSERT_EQ(std::signbit(ours), std::signbit(theirs));
    }
  }
}

TEST(Float, EveryRepresentableValueEncodesToItself) {
  for (const Case &c : kCases)
    for (uint32_t bits = 0; bits < (1u << c.bits); ++bits) {
      double v = apDecode(c, bits);
      if (std::isnan(v))
        continue;
      EXPECT_EQ(ourEncode(c, v), bits) << weft::runtime::dtypeName(c.type);
    }
}

TEST(Float, RoundingOfRandomDoublesMatchesAPFloat) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mant(-2.0, 2.0);
  std::uniform_int_distribution<int> exp(-30, 20);
  for (const Case &c : kCases)
    for (int i = 0; i < 200000; ++i) {
      double x = std::ldexp(mant(rng), exp(rng));
      uint32_t theirs = apEncode(c, x);
      double expected = apDecode(c, theirs);
      double rounded = weft::runtime::roundTo(x, c.type);
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(rounded)) << x;
        continue;
      }
      ASSERT_EQ(rounded, expected)
          << weft::runtime::dtypeName(c.type) << " x=" << x;
      ASSERT_EQ(ourEncode(c, x), theirs) << x;
    }
}

// The f32 -> bf16 rounding narrow models' copies run on the bits against
// APFloat, for every upper half with the lower halves where rounding
// decides (0, just below, at and just above the tie, the most), so every
// exponent (subnormals, overflow to infinity) and both tie directions.
TEST(Float, Bf16BitsOfEveryFloatClassMatchAPFloat) {
  const Case &bf16 = kCases[0];
  for (uint32_t upper = 0; upper < (1u << 16); ++upper)
    for (uint32_t lower :
         {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      uint32_t bits = upper << 16 | lower;
      float x;
      std::memcpy(&x, &bits, sizeof(x));
      uint16_t ours = weft::runtime::bf16Bits(x);
      if (std::isnan(x)) {
        ASSERT_EQ(ours, 0x7FC0) << std::hex << bits;
        continue;
      }
      ASSERT_EQ(ours, apEncode(bf16, x)) << std::hex << bits;
      // And back: the float a bf16 holds, exactly.
      ASSERT_EQ(static_cast<double>(weft::runtime::bf16Value(ours)),
                apDecode(bf16, ours))
          << std::hex << ours;
    }
}

// f16 from floats against APFloat: every f16 value, the midpoint to the
// next (a tie) and the floats either side of it, which covers every
// exponent, subnormals, both tie directions and overflow to infinity; and
// a million floats spread over every bit pattern.
TEST(Float, F16BitsOfFloatsMatchAPFloat) {
  const Case &f16 = kCases[1];
  auto check = [&](float x) {
    uint16_t ours = weft::runtime::f16Bits(x);
    if (std::isnan(x)) {
      ASSERT_EQ(ours, 0x7E00);
      return;
    }
    ASSERT_EQ(ours, apEncode(f16, x)) << x;
    ASSERT_EQ(static_cast<double>(weft::runtime::f16Value(ours)),
              apDecode(f16, ours));
  };
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    float x = weft::runtime::f16Value(static_cast<uint16_t>(h));
    check(x);
    if (!std::isfinite(x) || (h & 0x7FFF) >= 0x7BFF)
      continue; // The largest finite: its tie with infinity is below.
    float next = weft::runtime::f16Value(static_cast<uint16_t>(h + 1));
    float mid = static_cast<float>((double(x) + double(next)) / 2);
    for (float y :
         {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)})
      check(y);
  }
  for (float y : {65504.0f, 65519.0f, 65520.0f, 65536.0f, -65520.0f})
    check(y);
  forSpreadFloats(check);
}

// The FP8 formats from floats against APFloat: every value, the midpoint
// to the next (a tie) and the floats either side of it (subnormals, every
// exponent, E4M3FN's tie with its NaN slot at 464, E5M2's overflow at
// 61440), and a million floats spread over every bit pattern.
TEST(Float, Fp8BitsOfFloatsMatchAPFloat) {
  for (const Case &c : {kCases[2], kCases[3]}) {
    SCOPED_TRACE(std::string(weft::runtime::dtypeName(c.type)));
    auto check = [&](float x) {
      uint8_t ours = weft::runtime::fp8Bits(x, c.type);
      double rounded = weft::runtime::roundTo(x, c.type);
      if (std::isnan(rounded)) {
        ASSERT_EQ(ours, c.type == DType::F8E4M3FN ? 0x7F : 0x7E) << x;
        return;
      }
      ASSERT_EQ(ours, apEncode(c, x)) << x;
      ASSERT_EQ(static_cast<double>(weft::runtime::fp8Value(ours, c.type)),
                apDecode(c, ours));
    };
    for (uint32_t b = 0; b < 256; ++b) {
      double v = apDecode(c, b);
      if (std::isnan(v))
        continue;
      check(static_cast<float>(v));
      double next = apDecode(c, b + 1 < 256 ? b + 1 : b);
      if (!std::isfinite(v) || std::isnan(next) || !std::isfinite(next) ||
          b == 0x7F || b == 0xFF)
        continue;
      auto mid = static_cast<float>((v + next) / 2);
      for (float y :
           {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)})
        check(y);
    }
    for (float y : {448.0f, 464.0f, 464.1f, 480.0f, 57344.0f, 61439.0f,
                    61440.0f, 1e30f, -1e30f, INFINITY, -INFINITY})
      check(y);
    forSpreadFloats(check);
  }
}

TEST(Float, EdgeCases) {
  using weft::runtime::roundTo;
  // Ties go to even: 1 + 2^-8 lies halfway between two bf16 values.
  EXPECT_EQ(roundTo(1.0 + std::ldexp(1.0, -8), DType::BF16), 1.0);
  EXPECT_EQ(roundTo(1.0 + 3 * std::ldexp(1.0, -8), DType::BF16),
            1.0 + std::ldexp(1.0, -6));
  // F8E4M3FN: max 448; 464 is the tie between 448 and the NaN slot.
  EXPECT_EQ(roundTo(448.0, DType::F8E4M3FN), 448.0);
  EXPECT_EQ(roundTo(464.0, DType::F8E4M3FN), 448.0);
  EXPECT_TRUE(std::isnan(roundTo(500.0, DType::F8E4M3FN)));
  EXPECT_TRUE(std::isnan(roundTo(INFINITY, DType::F8E4M3FN)));
  // F8E5M2 and f16 overflow to infinity.
  EXPECT_EQ(roundTo(1e6, DType::F8E5M2), INFINITY);
  EXPECT_EQ(roundTo(-70000.0, DType::F16), -INFINITY);
  EXPECT_EQ(roundTo(65504.0, DType::F16), 65504.0);
  // Subnormals: the smallest f16 subnormal is 2^-24.
  EXPECT_EQ(roundTo(std::ldexp(1.0, -24), DType::F16), std::ldexp(1.0, -24));
  EXPECT_EQ(roundTo(std::ldexp(1.0, -26), DType::F16), 0.0);
  // Integers truncate.
  EXPECT_EQ(roundTo(-2.7, DType::I32), -2.0);
}

TEST(Float, DTypeNames) {
  EXPECT_EQ(weft::runtime::dtypeName(DType::F8E4M3FN), "F8_E4M3");
  EXPECT_EQ(weft::runtime::dtypeFromName("BF16"), DType::BF16);
  EXPECT_FALSE(weft::runtime::dtypeFromName("F33").has_value());
  EXPECT_EQ(weft::runtime::dtypeSize(DType::BF16), 2u);
  EXPECT_TRUE(weft::runtime::isFloatingPoint(DType::F8E5M2));
  EXPECT_FALSE(weft::runtime::isFloatingPoint(DType::U8));
}

// Both runtimes hold a constant as its elements encoded in its own type
// (the CPU runtime once kept floats whatever the type, so a bf16 constant
// read as pairs of halves of floats).
TEST(ConstantBytes, EncodesEachElementInItsType) {
  using namespace weft::runtime;
  sched::Constant c;
  c.type = {{3}, DType::BF16};
  c.floats = {1.0, -2.5, 0.1};
  std::vector<uint8_t> bytes = constantBytes(c);
  ASSERT_EQ(bytes.size(), 6u);
  EXPECT_EQ(decode(&bytes[0], DType::BF16), 1.0);
  EXPECT_EQ(decode(&bytes[2], DType::BF16), -2.5);
  EXPECT_EQ(decode(&bytes[4], DType::BF16), roundTo(0.1, DType::BF16));
  c.type = {{3}, DType::I32};
  c.splat = true;
  c.ints = {7};
  bytes = constantBytes(c);
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(decode(&bytes[8], DType::I32), 7.0);
}

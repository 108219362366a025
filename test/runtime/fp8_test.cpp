//===- fp8_test.cpp - FP8 quantize-dequantize against float64 -------------===//
//
// weft.fp8_quantize as the runtime runs it (Fp8Scaling.h through the CPU
// executor's kernel) against a reference written from the definition in
// float64: the FP8 grid listed from its formula, the nearest value found by
// search with ties to the even code, the scale's f32 division and the
// products done in double and rounded once to f32 (exact for one operation,
// as IEEE's correctly rounded f32 operation is). Bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/CpuMath.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/support/Float.h"
#include "runtime/support/Fp8Scaling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {
uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

/// The non-negative finite values of a format, by code (code & 1 is the
/// last mantissa bit: the even code wins a tie).
std::vector<double> grid(bool e4m3) {
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int last = e4m3 ? 0x7E : 0x7B; // 448 and 57344.
  std::vector<double> values;
  for (int code = 0; code <= last; ++code) {
    int e = code >> mantissa, f = code & ((1 << mantissa) - 1);
    values.push_back(
        e == 0 ? std::ldexp(f, 1 - bias - mantissa)
               : std::ldexp(1.0 + std::ldexp(f, -mantissa), e - bias));
  }
  return values;
}

/// Saturating round to the format, ties to even, by search.
double referenceRound(double x, bool e4m3) {
  static const std::vector<double> grids[2] = {grid(false), grid(true)};
  const std::vector<double> &g = grids[e4m3];
  if (std::isnan(x))
    return x;
  double a = std::min(std::fabs(x), g.back());
  auto hi = std::lower_bound(g.begin(), g.end(), a);
  size_t code = hi - g.begin();
  if (*hi != a) {
    size_t lo = code - 1;
    double dl = a - g[lo], dh = *hi - a;
    code = dl < dh ? lo : dh < dl ? code : (lo % 2 == 0 ? lo : code);
  }
  return std::copysign(g[code], x);
}

/// A block's scale from the definition, given the maximum it is scaled by
/// (its own, or delayed scaling's from earlier steps): the largest value
/// over that maximum (clamped below at 1e-12), or with power-of-two scales
/// the power of two that puts the maximum's binade at the format's top.
float referenceScale(double amax, bool e4m3, bool pow2) {
  double largest = e4m3 ? 448.0 : 57344.0;
  amax = std::max(amax, static_cast<double>(1e-12f));
  if (!pow2)
    return static_cast<float>(largest / amax);
  int shift = (e4m3 ? 8 : 15) - static_cast<int>(std::floor(std::log2(amax)));
  return static_cast<float>(std::ldexp(1.0, std::clamp(shift, -127, 127)));
}

/// The largest magnitude of a block's values.
double blockMax(const std::vector<float> &x) {
  double amax = 0.0;
  for (float v : x)
    amax = std::max(amax, std::fabs(static_cast<double>(v)));
  return amax;
}

/// One block's quantize-dequantize from the definition, scaled by `amax`
/// (by default the block's own maximum).
std::vector<float> referenceBlock(const std::vector<float> &x, bool e4m3,
                                  bool pow2,
                                  std::optional<double> amax = std::nullopt) {
  std::vector<float> out(x.size());
  if (std::any_of(x.begin(), x.end(),
                  [](float v) { return !std::isfinite(v); })) {
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return out;
  }
  float scale = referenceScale(amax ? *amax : blockMax(x), e4m3, pow2);
  for (size_t i = 0; i < x.size(); ++i) {
    auto scaled = static_cast<float>(static_cast<double>(x[i]) * scale);
    out[i] = static_cast<float>(referenceRound(scaled, e4m3) / scale);
  }
  return out;
}

void expectSameBits(float got, float want, const char *what, size_t i) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " element " << i;
    return;
  }
  EXPECT_EQ(bitsOf(got), bitsOf(want))
      << what << " element " << i << ": " << got << " vs " << want;
}
/// Calls `check(x, bits)` for finite floats spread over the bit patterns
/// (every 65521st).
template <typename Check> void forSpreadFloats(Check check) {
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 65521) {
    auto b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, sizeof(x));
    if (!std::isinf(x))
      check(x, b);
  }
}
} // namespace

// Every float spread over the bit patterns (and the grid's midpoints and
// their neighbours, where rounding ties) rounds as the search says.
TEST(Fp8Scaling, RoundMatchesTheFloat64Search) {
  for (bool e4m3 : {true, false}) {
    forSpreadFloats([&](float x, uint32_t b) {
      expectSameBits(weft_fp8_round(x, e4m3),
                     static_cast<float>(referenceRound(x, e4m3)), "spread", b);
    });
    std::vector<double> g = grid(e4m3);
    for (size_t c = 0; c + 1 < g.size(); ++c) {
      auto mid = static_cast<float>((g[c] + g[c + 1]) / 2);
      for (float x :
           {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), -mid}) {
        expectSameBits(weft_fp8_round(x, e4m3),
                       static_cast<float>(referenceRound(x, e4m3)), "tie", c);
      }
    }
  }
}

// sched.fp8_cast's codes hold what weft_fp8_round says, to the bit (sign
// of zero, subnormals, the largest value, NaN), read back through the
// safetensors decoder's table: the FP8 bytes a GEMM multiplies are the
// values the dequantized path computes with.
TEST(Fp8Scaling, CodesHoldTheRoundedValue) {
  using weft::runtime::DType;
  for (bool e4m3 : {true, false}) {
    DType type = e4m3 ? DType::F8E4M3FN : DType::F8E5M2;
    for (float scale : {1.0f, 448.0f / 3.7f, 0.001953125f, 1e20f}) {
      forSpreadFloats([&](float x, uint32_t b) {
        expectSameBits(
            weft::runtime::fp8Value(weft_fp8_code(x, scale, e4m3), type),
            weft_fp8_round(x * scale, e4m3), "code", b);
      });
    }
    // Every code's own value encodes back to it (NaN to the one NaN).
    for (int c = 0; c < 256; ++c) {
      float v = weft::runtime::fp8Value(static_cast<uint8_t>(c), type);
      if (std::isnan(v) || std::isinf(v))
        continue;
      EXPECT_EQ(weft_fp8_code(v, 1.0f, e4m3), c) << "code " << c;
    }
  }
}

namespace {
struct Recipe {
  std::vector<int64_t> block;
  bool pow2;
};

/// The executor's kernels (block maxima, then quantization) on `x` of
/// `shape` under each of `recipes`, both formats: each block equals the
/// reference's quantization of that block alone, bit for bit.
void expectBlocksMatchTheReference(const std::vector<int64_t> &shape,
                                   const std::vector<float> &x,
                                   const std::vector<Recipe> &recipes) {
  for (const Recipe &r : recipes) {
    for (bool e4m3 : {true, false}) {
      SCOPED_TRACE("block " + std::to_string(r.block[0]) + "x" +
                   std::to_string(r.block[1]) + "x" +
                   std::to_string(r.block[2]) + (e4m3 ? " e4m3" : " e5m2"));
      std::vector<int64_t> grid;
      for (size_t d = 0; d < shape.size(); ++d)
        grid.push_back(shape[d] / r.block[d]);
      std::vector<float> amax(grid[0] * grid[1] * grid[2]), y(x.size());
      weft::runtime::cpu::fp8Amax(x.data(), amax.data(), shape, grid);
      weft::runtime::cpu::fp8Quantize(x.data(), amax.data(), y.data(), shape,
                                      grid, e4m3, r.pow2);
      // Kept as codes (what a gather of the quantized tensor moves) and
      // decoded: the quantized values again, bit for bit.
      std::vector<uint8_t> codes(x.size());
      std::vector<float> decoded(x.size());
      weft::runtime::cpu::fp8Encode(x.data(), amax.data(), codes.data(), shape,
                                    grid, e4m3, r.pow2);
      weft::runtime::cpu::fp8Decode(codes.data(), amax.data(), decoded.data(),
                                    shape, grid, e4m3, r.pow2);
      for (size_t i = 0; i < x.size(); ++i)
        expectSameBits(decoded[i], y[i], "decoded", i);
      // Quantized again by the same maxima (weft-gather-per-step's state,
      // re-quantized each micro-batch): the same values.
      std::vector<float> again(x.size());
      weft::runtime::cpu::fp8Quantize(y.data(), amax.data(), again.data(),
                                      shape, grid, e4m3, r.pow2);
      for (size_t i = 0; i < x.size(); ++i)
        expectSameBits(again[i], y[i], "quantized again", i);
      // Gather each block's elements, quantize them alone, compare.
      for (int64_t b0 = 0; b0 < shape[0]; b0 += r.block[0])
        for (int64_t b1 = 0; b1 < shape[1]; b1 += r.block[1])
          for (int64_t b2 = 0; b2 < shape[2]; b2 += r.block[2]) {
            std::vector<size_t> at;
            for (int64_t i = b0; i < b0 + r.block[0]; ++i)
              for (int64_t j = b1; j < b1 + r.block[1]; ++j)
                for (int64_t k = b2; k < b2 + r.block[2]; ++k)
                  at.push_back((i * shape[1] + j) * shape[2] + k);
            std::vector<float> block;
            for (size_t i : at)
              block.push_back(x[i]);
            std::vector<float> want = referenceBlock(block, e4m3, r.pow2);
            for (size_t i = 0; i < at.size(); ++i)
              expectSameBits(y[at[i]], want[i], "quantized", at[i]);
          }
    }
  }
}
} // namespace

// On a [4, 6, 64] tensor of mixed magnitudes (one row all zeros, one with
// a NaN, a tiny value beside normal ones), under small block shapes of
// each kind: per tensor, per row, per column, 2 x 32, MXFP8's 1 x 32.
TEST(Fp8Scaling, QuantizeMatchesTheFloat64ReferencePerBlock) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 12);
  std::vector<float> x(4 * 6 * 64);
  for (float &v : x)
    v = std::ldexp(normal(rng), exponent(rng) / 4);
  std::fill(x.begin() + 64, x.begin() + 128, 0.0f); // Row (0, 1) is zero.
  x[5 * 64 + 3] = std::numeric_limits<float>::quiet_NaN(); // Row (0, 5).
  x[7 * 64 + 9] = 1e-30f; // A tiny value beside normal ones.
  expectBlocksMatchTheReference({4, 6, 64}, x,
                                {
                                    {{4, 6, 64}, false}, // Per tensor.
                                    {{1, 1, 64}, false}, // Per row.
                                    {{1, 6, 1}, false},  // Per column.
                                    {{1, 2, 32}, false}, // 2 x 32 blocks.
                                    {{1, 1, 32}, true},  // MXFP8.
                                });
}

// The recipes' own block shapes on a [2, 256, 384] tensor whose magnitude
// changes by 32-row span and 64-column span (so a 128-block's maximum is
// not its neighbour's), with a NaN: DeepSeek-V3's 1 x 128 activation tiles
// and 128 x 128 weight blocks, the weight gradient's 128 x 1 tiles along
// the tokens, row-wise's whole rows and columns, and MXFP8's 1 x 32 and
// 32 x 1 with power-of-two scales.
TEST(Fp8Scaling, RecipesBlocksMatchTheFloat64Reference) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(2 * 256 * 384);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t row = i / 384 % 256, col = i % 384;
    x[i] = std::ldexp(normal(rng), static_cast<int>(row / 32 % 5) -
                                       2 * static_cast<int>(col / 64 % 4));
  }
  x[(256 + 200) * 384 + 300] = std::numeric_limits<float>::quiet_NaN();
  expectBlocksMatchTheReference({2, 256, 384}, x,
                                {
                                    {{1, 1, 128}, false},   // 1 x 128 tiles.
                                    {{1, 128, 128}, false}, // 128 x 128.
                                    {{1, 128, 1}, false},   // 128 x 1 tiles.
                                    {{1, 1, 384}, false},   // Row-wise rows.
                                    {{1, 256, 1}, false},   // And columns.
                                    {{1, 1, 32}, true},     // MXFP8 1 x 32.
                                    {{1, 32, 1}, true},     // And 32 x 1.
                                });
}

// weft.fp8_group_quantize's blocks as the format defines them
// (docs/bundle-format.md's fp8_group_cast), found here by listing each
// expert's rows from the sizes, against the executor's kernel (CpuMath's
// fp8GroupQuantize, through Fp8Scaling.h's weft_fp8_expert_column). Five
// groups on two experts (group g on expert g mod 2; group 2 empty), each
// expert's tiles spanning its groups, 30 rows after the groups. Values: each
// block equals the reference's quantization of that block alone, bit for bit,
// and the rows after the groups are zero. Codes (sched.fp8_group_cast): each
// block's codes, at column c, row first_e + v of the [cols, n] buffer, are the
// reference's rounding with its scale, and its 1 / s sits in row first_e / tile
// + e + v / tile (e for whole experts).
TEST(Fp8Scaling, GroupQuantizeMatchesTheFloat64ReferencePerBlock) {
  using weft::runtime::DType;
  constexpr int64_t n = 230, cols = 3, experts = 2;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * cols);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < cols; ++c)
      x[r * cols + c] = std::ldexp(normal(rng), (r / 16 % 4) * 2 - 3 * c);
  x[101 * cols + 1] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> sizes = {40, 25, 0, 71, 64};
  constexpr int64_t routed = 200;
  // Each expert's rows, in order: its groups', clamped to the rows left.
  std::vector<std::vector<int64_t>> rowsOf(experts);
  for (int64_t g = 0, start = 0; g < 5; ++g) {
    int64_t size = std::min<int64_t>(sizes[g], n - start);
    for (int64_t r = start; r < start + size; ++r)
      rowsOf[g % experts].push_back(r);
    start += size;
  }
  ASSERT_EQ(rowsOf[0].size() + rowsOf[1].size(), size_t(routed));
  for (int64_t tile : {0, 32, 128}) {
    for (bool e4m3 : {true, false}) {
      bool pow2 = tile == 32;
      SCOPED_TRACE("tiles of " + std::to_string(tile) +
                   (e4m3 ? " rows, e4m3" : " rows, e5m2"));
      int64_t tiles = weft_fp8_group_tiles(experts, n, tile);
      ASSERT_EQ(tiles, tile ? (n + tile - 1) / tile + experts : experts);
      std::vector<float> values(n * cols, -1.0f), scaleInv(tiles * cols, -1.0f);
      std::vector<uint8_t> codes(cols * n, 0xAB);
      ASSERT_TRUE(weft::runtime::cpu::fp8GroupQuantize(
                      x.data(), sizes.data(), 5, experts, n, cols, tile, e4m3,
                      pow2, values.data(), nullptr, nullptr, "test")
                      .ok());
      ASSERT_TRUE(weft::runtime::cpu::fp8GroupQuantize(
                      x.data(), sizes.data(), 5, experts, n, cols, tile, e4m3,
                      pow2, nullptr, codes.data(), scaleInv.data(), "test")
                      .ok());
      for (int64_t i = routed * cols; i < n * cols; ++i)
        ASSERT_EQ(bitsOf(values[i]), 0u) << "element " << i;
      int64_t first = 0;
      for (int64_t e = 0; e < experts; ++e) {
        const std::vector<int64_t> &rows = rowsOf[e];
        int64_t count = rows.size(), step = tile ? tile : count;
        for (int64_t v0 = 0; v0 < count; v0 += step) {
          int64_t end = std::min(count, v0 + step);
          for (int64_t c = 0; c < cols; ++c) {
            std::vector<float> block;
            for (int64_t v = v0; v < end; ++v)
              block.push_back(x[rows[v] * cols + c]);
            std::vector<float> want = referenceBlock(block, e4m3, pow2);
            for (int64_t v = v0; v < end; ++v)
              expectSameBits(values[rows[v] * cols + c], want[v - v0], "value",
                             rows[v] * cols + c);
            int64_t t = tile ? first / tile + e + v0 / tile : e;
            float inv = scaleInv[t * cols + c];
            if (std::isnan(want[0]))
              continue; // A NaN block's codes say nothing of a scale.
            float scale = referenceScale(blockMax(block), e4m3, pow2);
            expectSameBits(inv, 1.0f / scale, "1 / s", t * cols + c);
            for (int64_t v = v0; v < end; ++v) {
              float code = weft::runtime::fp8Value(codes[c * n + first + v],
                                                   e4m3 ? DType::F8E4M3FN
                                                        : DType::F8E5M2);
              auto scaled = static_cast<float>(
                  static_cast<double>(x[rows[v] * cols + c]) * scale);
              expectSameBits(code,
                             static_cast<float>(referenceRound(scaled, e4m3)),
                             "code", c * n + first + v);
              // And dequantized through 1 / s it is the reference's value
              // (exact with power-of-two scales, else within an ulp).
              if (pow2)
                expectSameBits(code * inv, want[v - v0], "code * 1/s",
                               c * n + first + v);
              else
                EXPECT_NEAR(code * inv, want[v - v0],
                            std::fabs(want[v - v0]) * 1.2e-7f)
                    << "code * 1/s at " << c * n + first + v;
            }
          }
        }
        first += count;
      }
    }
  }
}

// What the recipes promise: a value exactly on the scaled grid survives
// (the block's amax maps to the largest finite value), a zero block stays
// zero, and an MXFP8 scale is a power of two.
TEST(Fp8Scaling, ScalesMapTheAmaxToTheLargestValue) {
  EXPECT_EQ(weft_fp8_scale(448.0f, 1, 0), 1.0f);
  EXPECT_EQ(weft_fp8_quantize(3.5f, weft_fp8_scale(3.5f, 1, 0), 1), 3.5f);
  EXPECT_EQ(weft_fp8_scale(0.0f, 1, 0), 448.0f / 1e-12f);
  EXPECT_EQ(weft_fp8_quantize(0.0f, weft_fp8_scale(0.0f, 1, 0), 1), 0.0f);
  // amax 3 (2^1.58): 2^(8 - 1) = 128, so 3 * 128 = 384 <= 448.
  EXPECT_EQ(weft_fp8_scale(3.0f, 1, 1), 128.0f);
  EXPECT_EQ(weft_fp8_scale(3.0f, 0, 1), 16384.0f);
  EXPECT_TRUE(std::isnan(weft_fp8_scale(INFINITY, 1, 0)));
  // A NaN's block maximum is infinity (a max all-reduce keeps it), whose
  // scale makes the block NaN.
  std::vector<float> x = {1.0f, NAN, -2.0f, 3.0f}, amax(2);
  weft::runtime::cpu::fp8Amax(x.data(), amax.data(), {2, 2}, {2, 1});
  EXPECT_EQ(amax[0], INFINITY);
  EXPECT_EQ(amax[1], 3.0f);
}

// Delayed scaling (Transformer Engine's DelayedScaling, --fp8
// tensorwise-delayed) quantizes a tensor by the largest maximum of its
// history times 2^margin (weft-fp8 builds that maximum in the IR and hands
// it to weft.fp8_quantize), not by its own. Against the definition in
// float64, bit for bit, in E4M3 (the forward) and E5M2 (gradients), with
// margins 0 and 2, for histories below the tensor's maximum (a stale scale:
// the largest values saturate at the format's top) and above it.
TEST(Fp8Scaling, DelayedScalingQuantizesByTheHistorysMaximum) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(4 * 96);
  for (float &v : x)
    v = std::ldexp(normal(rng), 3);
  double own = 0;
  for (float v : x)
    own = std::max(own, std::fabs(double(v)));
  int saturatedSomewhere = 0;
  for (bool e4m3 : {true, false})
    for (int margin : {0, 2})
      for (double history : {own / 8, own / 2, own * 3}) {
        SCOPED_TRACE(std::string(e4m3 ? "e4m3" : "e5m2") + " margin " +
                     std::to_string(margin) + " history " +
                     std::to_string(history / own) + " x own");
        // max(history) * 2^margin, in f32 as the IR computes it.
        float amax = static_cast<float>(history) * std::ldexp(1.0f, margin);
        std::vector<float> y(x.size());
        weft::runtime::cpu::fp8Quantize(x.data(), &amax, y.data(), {4, 96},
                                        {1, 1}, e4m3, /*pow2=*/false);
        std::vector<float> want = referenceBlock(x, e4m3, false, amax);
        for (size_t i = 0; i < x.size(); ++i)
          expectSameBits(y[i], want[i], "quantized", i);
        // Values past the delayed maximum come out at the format's top
        // over the scale (rounded to f32): saturated.
        float top =
            static_cast<float>((e4m3 ? 448.0 : 57344.0) /
                               double(referenceScale(amax, e4m3, false)));
        for (size_t i = 0; i < x.size(); ++i)
          if (std::fabs(double(x[i])) > double(amax)) {
            EXPECT_EQ(std::fabs(y[i]), top) << "element " << i;
            ++saturatedSomewhere;
          }
      }
  // The stale histories do saturate (1/8 and 1/2 of the maximum).
  EXPECT_GT(saturatedSomewhere, 0);
}

// Where each block's scale sits, as cuBLASLt's scale modes read them and
// torch._scaled_mm lays them out (a GPU is the final word: bench/gpu/run.sh
// multiplies these layouts against torch._scaled_mm): per row, [rows];
// 1 x 128 tiles outer-dim-major, [k/128][rows]; 128 x 128 blocks
// row-major with each row of scales padded to a multiple of 4 f32.
TEST(Fp8Scaling, BlockScaleLayoutsAreCublasLts) {
  EXPECT_EQ(weft_fp8_scale_index(WEFT_FP8_SCALE_TENSOR, 200, 300, 256, 512), 0);
  EXPECT_EQ(weft_fp8_scale_index(WEFT_FP8_SCALE_ROWS, 200, 300, 256, 512), 200);
  // Tile (row 200, k block 2) of a 256 x 512 operand: 2 * 256 + 200.
  EXPECT_EQ(weft_fp8_scale_index(WEFT_FP8_SCALE_VEC128, 200, 300, 256, 512),
            712);
  EXPECT_EQ(weft_fp8_scale_count(WEFT_FP8_SCALE_VEC128, 256, 512), 1024);
  // Block (1, 2) of 256 x 640 (5 blocks of k, a row of scales padded to
  // 8): 1 * 8 + 2; 2 rows of 8.
  EXPECT_EQ(weft_fp8_scale_index(WEFT_FP8_SCALE_BLK128, 200, 300, 256, 640),
            10);
  EXPECT_EQ(weft_fp8_scale_count(WEFT_FP8_SCALE_BLK128, 256, 640), 16);
  EXPECT_EQ(weft_fp8_scale_count(WEFT_FP8_SCALE_BLK128, 100, 128), 4);
  // MXFP8's 1 x 32 blocks, outer-dim-major as 1 x 128 tiles: block (row
  // 200, k block 9) of 256 x 512: 9 * 256 + 200; 16 blocks of k a row.
  EXPECT_EQ(weft_fp8_scale_index(WEFT_FP8_SCALE_VEC32, 200, 300, 256, 512),
            2504);
  EXPECT_EQ(weft_fp8_scale_count(WEFT_FP8_SCALE_VEC32, 256, 512), 4096);
  EXPECT_EQ(weft_fp8_scale_block_k(WEFT_FP8_SCALE_VEC32, 512), 32);
  // It pairs with itself only.
  for (int other = 0; other < WEFT_FP8_SCALE_MODES; ++other) {
    EXPECT_EQ(weft_fp8_scale_modes_pair(WEFT_FP8_SCALE_VEC32, other),
              other == WEFT_FP8_SCALE_VEC32)
        << other;
    EXPECT_EQ(weft_fp8_scale_modes_pair(other, WEFT_FP8_SCALE_VEC32),
              other == WEFT_FP8_SCALE_VEC32)
        << other;
  }
}

// The kernels' decoding of a code (weft_fp8_value, which the emulated
// tensor cores use) against the runtime's exact decoder, every byte of
// both formats: subnormals, E4M3FN's 448 and its NaNs, E5M2's infinities.
TEST(Fp8Scaling, EveryCodeDecodesToItsValue) {
  for (auto [format, e4m3] : {std::pair{weft::runtime::DType::F8E4M3FN, 1},
                              std::pair{weft::runtime::DType::F8E5M2, 0}})
    for (int code = 0; code < 256; ++code) {
      float want = weft::runtime::fp8Value(static_cast<uint8_t>(code), format),
            got = weft_fp8_value(static_cast<unsigned char>(code), e4m3);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << e4m3 << " " << code;
      else
        EXPECT_EQ(got, want) << e4m3 << " " << code;
      // And back: each finite code is what weft_fp8_code gives its value.
      if (std::isfinite(want))
        EXPECT_EQ(weft_fp8_code(want, 1.0f, e4m3), code) << e4m3 << " " << code;
    }
  EXPECT_EQ(weft_fp8_value(0x7E, 1), 448.0f);
  EXPECT_EQ(weft_fp8_value(0x01, 1), std::ldexp(1.0f, -9));
  EXPECT_EQ(weft_fp8_value(0x7C, 0), INFINITY);
  EXPECT_EQ(weft_fp8_value(0x83, 0), -3 * std::ldexp(1.0f, -16));
}

// Which modes a block shape is: one where blocks are distinct, several
// where they coincide (a 128 x 128 tensor is one block and one 128 x 128
// block; rows of 128 are 1 x 128 tiles), none for blocks no mode has.
TEST(Fp8Scaling, BlocksNameTheirScaleModes) {
  auto bit = [](int mode) { return 1 << mode; };
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 256, 512),
            bit(WEFT_FP8_SCALE_TENSOR));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 1, 512),
            bit(WEFT_FP8_SCALE_ROWS));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 1, 128),
            bit(WEFT_FP8_SCALE_VEC128));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 128, 128),
            bit(WEFT_FP8_SCALE_BLK128));
  EXPECT_EQ(weft_fp8_scale_modes_of(128, 128, 128, 128),
            bit(WEFT_FP8_SCALE_TENSOR) | bit(WEFT_FP8_SCALE_BLK128));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 128, 1, 128),
            bit(WEFT_FP8_SCALE_ROWS) | bit(WEFT_FP8_SCALE_VEC128));
  // MXFP8's 1 x 32 blocks: Weft's own kernel's; a row of 32 is rows too.
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 1, 32),
            bit(WEFT_FP8_SCALE_VEC32));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 32, 1, 32),
            bit(WEFT_FP8_SCALE_ROWS) | bit(WEFT_FP8_SCALE_VEC32));
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 48, 1, 32), 0); // k % 32 != 0.
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 32, 32), 0);
  EXPECT_EQ(weft_fp8_scale_modes_of(256, 512, 128, 1), 0);
  // A [2, 8, 64] tensor cut per row: rows of the [16, 64] matrix; cut in
  // 4-row groups of its middle dimension: 4 x 64 blocks; cut along its
  // first dimension only: 8-row blocks; a cut first dimension with its
  // middle cut too is no rectangle.
  long shape[] = {2, 8, 64}, rows = 0, cols = 0;
  long perRow[] = {2, 8, 1}, groups[] = {2, 2, 1}, outer[] = {2, 1, 1},
       mixed[] = {1, 2, 1};
  ASSERT_TRUE(weft_fp8_matrix_blocks(shape, perRow, 3, &rows, &cols));
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(cols, 64);
  ASSERT_TRUE(weft_fp8_matrix_blocks(shape, groups, 3, &rows, &cols));
  EXPECT_EQ(rows, 4);
  ASSERT_TRUE(weft_fp8_matrix_blocks(shape, outer, 3, &rows, &cols));
  EXPECT_EQ(rows, 8);
  EXPECT_FALSE(weft_fp8_matrix_blocks(shape, mixed, 3, &rows, &cols));
}

// An fp8_cast's blocks as a matrix of its input: a per-tensor cast's one
// f32 may have any shape (one block: the whole [batch * rows, cols]); the
// block maxima of a blocked one have the input's rank.
TEST(Fp8Scaling, CastBlocksOfPerTensorAndBlockedMaxima) {
  using weft::runtime::sched::fp8CastBlocks;
  EXPECT_EQ(fp8CastBlocks({2, 16, 32}, {1}),
            (std::pair<int64_t, int64_t>{32, 32}));
  EXPECT_EQ(fp8CastBlocks({16, 32}, {1, 1}),
            (std::pair<int64_t, int64_t>{16, 32}));
  EXPECT_EQ(fp8CastBlocks({2, 16, 256}, {2, 16, 2}),
            (std::pair<int64_t, int64_t>{1, 128}));
  EXPECT_EQ(fp8CastBlocks({256, 384}, {2, 3}),
            (std::pair<int64_t, int64_t>{128, 128}));
}

// sched.fp8_scale_inv writes, from the maxima alone, the scales a
// sched.fp8_cast of the same blocks writes beside its codes, to the bit,
// in every scale mode, format and scaling, untransposed and transposed
// (an expert weight's batch of matrices each on its own): a held FP8
// state's GEMMs read them with the codes a cast once made. The padding of
// a 128 x 128 grid is left alone by both.
TEST(Fp8Scaling, ScaleInvOfMaximaIsTheCastsScales) {
  struct Layout {
    int mode;
    long batch, rows, cols, blockRows, blockCols; // x [batch, rows, cols].
    int transpose;
  };
  const Layout layouts[] = {
      {WEFT_FP8_SCALE_TENSOR, 1, 64, 96, 64, 96, 0},
      {WEFT_FP8_SCALE_TENSOR, 1, 64, 96, 64, 96, 1},
      {WEFT_FP8_SCALE_ROWS, 1, 48, 64, 1, 64, 0},
      {WEFT_FP8_SCALE_ROWS, 1, 64, 48, 64, 1, 1},
      {WEFT_FP8_SCALE_ROWS, 2, 64, 32, 64, 1, 1},
      {WEFT_FP8_SCALE_VEC128, 1, 32, 384, 1, 128, 0},
      {WEFT_FP8_SCALE_VEC128, 1, 384, 32, 128, 1, 1},
      {WEFT_FP8_SCALE_BLK128, 1, 256, 640, 128, 128, 0},
      {WEFT_FP8_SCALE_BLK128, 1, 256, 640, 128, 128, 1},
      {WEFT_FP8_SCALE_BLK128, 1, 100, 256, 100, 128, 0},
      {WEFT_FP8_SCALE_VEC32, 1, 16, 128, 1, 32, 0},
      {WEFT_FP8_SCALE_VEC32, 1, 64, 32, 32, 1, 1},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::uniform_real_distribution<float> exponent(-20.0f, 20.0f);
  for (const Layout &t : layouts)
    for (int e4m3 : {1, 0})
      for (int pow2 : {0, 1}) {
        SCOPED_TRACE(testing::Message()
                     << "mode " << t.mode << " " << t.batch << "x" << t.rows
                     << "x" << t.cols << " transpose " << t.transpose
                     << " e4m3 " << e4m3 << " pow2 " << pow2);
        long blocks = t.batch * t.rows / t.blockRows * (t.cols / t.blockCols);
        std::vector<float> amax(blocks), x(t.batch * t.rows * t.cols);
        for (float &a : amax)
          a = std::ldexp(1.0f, static_cast<int>(exponent(rng)));
        for (float &v : x)
          v = value(rng);
        long operandRows = t.batch * (t.transpose ? t.cols : t.rows),
             k = t.transpose ? t.rows : t.cols;
        long count = weft_fp8_scale_count(t.mode, operandRows, k);
        std::vector<float> cast(count, -1.0f), fromMaxima(count, -1.0f);
        std::vector<unsigned char> codes(x.size());
        for (long i = 0; i < static_cast<long>(x.size()); ++i)
          weft_fp8_cast_element(x[i], i, amax.data(), codes.data(), cast.data(),
                                t.batch, t.rows, t.cols, t.transpose, e4m3,
                                pow2, t.mode, t.blockRows, t.blockCols);
        for (long blk = 0; blk < blocks; ++blk)
          weft_fp8_block_scale_inv(blk, amax.data(), fromMaxima.data(), t.batch,
                                   t.rows, t.cols, t.transpose, e4m3, pow2,
                                   t.mode, t.blockRows, t.blockCols);
        for (long i = 0; i < count; ++i)
          ASSERT_EQ(weft_fp8_bits_of(fromMaxima[i]), weft_fp8_bits_of(cast[i]))
              << "scale " << i;
        // Every scale a GEMM reads is written: a block's first element
        // writes its one (1 / s is never negative).
        if (t.mode != WEFT_FP8_SCALE_BLK128)
          for (long i = 0; i < count; ++i)
            ASSERT_GE(fromMaxima[i], 0.0f) << "scale " << i;
      }
}

namespace {
/// A recipe's blocks for y = x [m, k] @ w [k, n], both E4M3 (the forward).
struct GemmRecipe {
  const char *name;
  int64_t xRows, xCols, wRows, wCols; // One block of x, one of w.
  bool pow2;
  /// Each block is scaled by its maximum times this: 1 for the recipes
  /// that scale by the current maximum; delayed scaling's history can lag
  /// the tensor (below 1: its largest values saturate) or lead it.
  double delayed = 1.0;
};

/// The stated error of one element quantized by E4M3 in a block whose
/// scale is `scale` (stored value = round(a * scale) / scale):
///  - in the normal range, half a unit in the last place, at most 2^-4 |a|
///    (3 mantissa bits);
///  - among subnormals (|a * scale| < 2^-6), half their spacing, 2^-10 /
///    scale;
///  - above the largest finite value (MXFP8's power-of-two scales put a
///    block's maximum past 448, up to 512, and so does a delayed maximum
///    below the tensor's), the saturation |a| - 448 / scale, plus half an
///    f32 ulp of 448 / scale (the stored value, rounded to f32 where the
///    scale is not a power of two).
double e4m3Bound(double a, double scale) {
  double m = std::fabs(a), top = 448.0 / scale;
  return std::max({std::ldexp(m, -4), std::ldexp(1.0, -10) / scale,
                   m - top + std::ldexp(top, -24)});
}

/// The recipe's scale of a block with largest magnitude `amax`, written
/// from the recipes' definitions (not from Fp8Scaling.h).
double recipeScale(double amax, bool pow2) {
  return pow2 ? std::ldexp(1.0,
                           8 - static_cast<int>(std::floor(std::log2(amax))))
              : 448.0 / amax;
}
} // namespace

// What each recipe promises for a GEMM: every output element of x @ w over
// the quantized operands (the runtime's quantization, the product summed in
// float64) lies within the bound its operands' element errors give,
//   |y'_ij - y_ij| <= sum_k e(x_ik) |w_kj| + |x_ik| e(w_kj) + e(x_ik) e(w_kj),
// with e the E4M3 bound above at each block's scale (each element is
// checked against it too). Some rows of x are 2^12 larger than the rest
// and some columns of w 2^8 larger than the rest (activation and weight
// outliers), so the blocks of one operand have different scales and
// per-tensor scaling puts the small values near E4M3's subnormals. In
// E4M3's normal range the relative error does not depend on the scale, so
// a scale too small shows only where it pushes values into subnormals
// (here the per-tensor case's small rows); too large, in any recipe, as
// saturation. Each
// GEMM's worst error is about a tenth of its bound (random signs: the
// element errors partly cancel in the sum), so a bound far too loose
// would show.
TEST(Fp8Scaling, GemmsStayWithinTheRecipesStatedError) {
  const int64_t m = 16, k = 256, n = 128;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(m * k), w(k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j)
      x[i * k + j] = std::ldexp(normal(rng), i % 5 == 0 ? 12 : 0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      w[i * n + j] = std::ldexp(normal(rng), j % 7 == 0 ? 4 : -4);

  const GemmRecipe recipes[] = {
      {"tensorwise", m, k, k, n, false},
      {"rowwise", 1, k, k, 1, false},
      {"blockwise", 1, 128, 128, 128, false},
      {"mxfp8", 1, 32, 32, 1, true},
      // Delayed scaling, its history at 3/4 and at twice the maximum.
      {"tensorwise-delayed (stale)", m, k, k, n, false, 0.75},
      {"tensorwise-delayed (ahead)", m, k, k, n, false, 2.0},
  };
  for (const GemmRecipe &r : recipes) {
    SCOPED_TRACE(r.name);
    // The runtime's quantization.
    auto quantize = [&](const std::vector<float> &v, int64_t rows, int64_t cols,
                        int64_t br, int64_t bc) {
      weft::runtime::cpu::Shape shape = {rows, cols},
                                grid = {rows / br, cols / bc};
      std::vector<float> amax(grid[0] * grid[1]), q(v.size());
      weft::runtime::cpu::fp8Amax(v.data(), amax.data(), shape, grid);
      for (float &a : amax)
        a = static_cast<float>(a * r.delayed);
      weft::runtime::cpu::fp8Quantize(v.data(), amax.data(), q.data(), shape,
                                      grid, /*e4m3=*/true, r.pow2);
      // Each element's stated error, at its block's scale from the
      // definition.
      std::vector<double> bound(v.size());
      int outside = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double blockMax = 0;
          for (int64_t a = i / br * br; a < (i / br + 1) * br; ++a)
            for (int64_t b = j / bc * bc; b < (j / bc + 1) * bc; ++b)
              blockMax = std::max(blockMax, std::fabs(double(v[a * cols + b])));
          bound[i * cols + j] = e4m3Bound(
              v[i * cols + j],
              recipeScale(double(static_cast<float>(blockMax * r.delayed)),
                          r.pow2));
          outside += std::fabs(double(q[i * cols + j]) - v[i * cols + j]) >
                     bound[i * cols + j];
        }
      EXPECT_EQ(outside, 0) << "elements quantized outside their bound";
      return std::pair{q, bound};
    };
    auto [xq, ex] = quantize(x, m, k, r.xRows, r.xCols);
    auto [wq, ew] = quantize(w, k, n, r.wRows, r.wCols);
    double worstShare = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0, got = 0, allowed = 0;
        for (int64_t l = 0; l < k; ++l) {
          double a = x[i * k + l], b = w[l * n + j];
          exact += a * b;
          got += double(xq[i * k + l]) * wq[l * n + j];
          allowed += ex[i * k + l] * std::fabs(b) +
                     std::fabs(a) * ew[l * n + j] +
                     ex[i * k + l] * ew[l * n + j];
        }
        double error = std::fabs(got - exact);
        // float64 sums of 256 products: 1e-12 of the terms is ample.
        ASSERT_LE(error, allowed * (1 + 1e-12))
            << "y[" << i << ", " << j << "]: " << got << " vs " << exact;
        worstShare = std::max(worstShare, error / allowed);
      }
    // The bound is not slack to the point of testing nothing.
    EXPECT_GT(worstShare, 0.05);
  }
}

//===- fp8_gain_test.cpp - weft-fp8's judgement of a GEMM's gain ----------===//
//
// timeFp8Gemm against times worked by hand on a device of round figures:
// 1 TB/s, 100 TFLOP/s bf16, 200 fp8, GEMMs at the peak (no efficiency
// curve).
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Fp8Gain.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
DeviceSpec roundDevice() {
  DeviceSpec d;
  d.memoryBandwidth = 1e12;
  d.peakFlops = {{"bf16", 100e12}, {"fp8", 200e12}};
  return d;
}
} // namespace

// 4096^3: every GEMM compute-bound. In bf16 each takes 2 * 4096^3 / 1e14 =
// 1.374390 ms, three 4.123169 ms; in FP8 half that, 2.061584 ms. Quantizing
// x, w and dy once (3 * 4096^2 elements, each read twice as bf16 and
// written as one byte: 5 bytes) moves 251.658 MB: 0.251658 ms. FP8 saves
// 1.809926 ms.
TEST(Fp8Gain, ALargeGemmGainsItsHalvedComputeLessTheQuantizations) {
  double e = 4096.0 * 4096.0;
  Fp8GemmTimes t = timeFp8Gemm(roundDevice(), {e, e, e, 4096}, 100e12,
                               /*modelBytes=*/2, /*quantized=*/3 * e);
  EXPECT_NEAR(t.model, 4.123169e-3, 1e-9);
  EXPECT_NEAR(t.fp8, 2.061584e-3, 1e-9);
  EXPECT_NEAR(t.quantize, 0.251658e-3, 1e-9);
  EXPECT_NEAR(t.gain(), 1.809926e-3, 1e-9);
}

// x [4096, 16], w [16, 16]: every GEMM memory-bound. bf16: each moves
// 2 * (65536 + 256 + 65536) = 262656 bytes, three 0.787968 us. FP8 reads
// its two operands as bytes and writes the third as bf16: the forward and
// the input gradient 65792 + 131072, the weight gradient 131072 + 512,
// 525312 bytes, 0.525312 us. Quantizing the 131328 elements, 5 bytes each,
// 0.65664 us, costs more than the 0.262656 us FP8 saves.
TEST(Fp8Gain, ASmallGemmLosesToItsQuantizations) {
  Fp8GemmTimes t = timeFp8Gemm(roundDevice(), {65536, 256, 65536, 16}, 100e12,
                               /*modelBytes=*/2, /*quantized=*/131328);
  EXPECT_NEAR(t.model, 0.787968e-6, 1e-12);
  EXPECT_NEAR(t.fp8, 0.525312e-6, 1e-12);
  EXPECT_NEAR(t.quantize, 0.65664e-6, 1e-12);
  EXPECT_NEAR(t.gain(), -0.393984e-6, 1e-12);
  EXPECT_LT(t.gain(), 0);
}

// An f32 model's quantizations read 4 bytes an element twice: 9 bytes.
TEST(Fp8Gain, QuantizationsReadTheModelsPrecision) {
  Fp8GemmTimes t = timeFp8Gemm(roundDevice(), {65536, 256, 65536, 16}, 100e12,
                               /*modelBytes=*/4, /*quantized=*/1000);
  EXPECT_NEAR(t.quantize, 9000 / 1e12, 1e-18);
}

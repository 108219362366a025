// weft-fp8 with a device: a GEMM stays in the model's precision unless FP8
// gains on it at the shapes one rank runs it at (Fp8Gain.h; dgx-h100 is
// 989 TFLOP/s bf16, 1979 fp8, 3.35 TB/s, GEMMs on the 0.72 efficiency
// curve).
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none device=dgx-h100:1})' | FileCheck %s --check-prefix=ONE
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none device=dgx-h100:1 plan=tp=8})' | FileCheck %s --check-prefix=TP8
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise keep=none device=dgx-h100:1})' | FileCheck %s --check-prefix=TENSOR
// A device without an FP8 rate (a CPU emulates FP8) judges nothing.
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none device=cpu:1})' | FileCheck %s --check-prefix=CPU

// One column-parallel projection, 2048 tokens x 4096 -> 4096. On one
// rank its three GEMMs take 302 us in bf16 and 151 us in FP8; row-wise
// quantizes x, w and dy twice each (the backward re-quantizes along the
// tokens and the output features), 5 bytes an element: 100 us. At tp=8 a
// rank's 512 columns save 24 us and their quantizations cost 34 us.
// ONE-LABEL: func.func @forward
// ONE-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = []
// ONE: weft.fp8_quantize
// ONE: weft.fp8_quantize
// ONE: weft.matmul
// TP8-LABEL: func.func @forward
// TP8-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = ["l0.proj"]
// TP8-NOT: weft.fp8_quantize
// TP8: weft.matmul
// TENSOR-LABEL: func.func @forward
// TENSOR-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = []
// CPU-LABEL: func.func @forward
// CPU-NOT: weft.fp8_no_gain
// CPU: weft.fp8_quantize
func.func @forward(%x: tensor<2048x4096xbf16> {weft.input = "x"})
    -> (tensor<2048x4096xbf16> {weft.output = "y"}) {
  %w = weft.param "l0.proj" init(normal, 2.0e-02) {weft.layer = 0 : i64, weft.tp_dim = 1 : i64} : tensor<4096x4096xbf16>
  %y = weft.matmul %x, %w : tensor<2048x4096xbf16>, tensor<4096x4096xbf16>
  return %y : tensor<2048x4096xbf16>
}

// -----

// Two GEMMs share x: a, 4096 -> 768, gains under row-wise only with half
// of x's quantizations (+7 us; alone -6 us); b, 4096 -> 16, never (-8 us).
// b drops first, which leaves x to a alone, and then a drops too. Under
// tensorwise (one quantization each) a gains alone (+14 us) and b still
// drops.
// ONE-LABEL: func.func @forward
// ONE-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = ["l0.a", "l0.b"]
// ONE-NOT: weft.fp8_quantize
// ONE: return
// TENSOR-LABEL: func.func @forward
// TENSOR-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = ["l0.b"]
// TENSOR: %[[XA:.*]] = weft.fp8_amax %arg0
// TENSOR: %[[XQ:.*]] = weft.fp8_quantize %arg0, %[[XA]]
// TENSOR: weft.matmul %[[XQ]], %{{.*}} : tensor<2048x4096xbf16>, tensor<4096x768xbf16>
// TENSOR: weft.matmul %arg0, %{{.*}} : tensor<2048x4096xbf16>, tensor<4096x16xbf16>
// Neither has a tp_dim: at tp=8 both are whole on every rank, as on one.
// TP8-LABEL: func.func @forward
// TP8-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = ["l0.a", "l0.b"]
func.func @forward(%x: tensor<2048x4096xbf16> {weft.input = "x"})
    -> (tensor<2048x768xbf16> {weft.output = "a"}, tensor<2048x16xbf16> {weft.output = "b"}) {
  %wa = weft.param "l0.a" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<4096x768xbf16>
  %wb = weft.param "l0.b" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<4096x16xbf16>
  %a = weft.matmul %x, %wa : tensor<2048x4096xbf16>, tensor<4096x768xbf16>
  %b = weft.matmul %x, %wb : tensor<2048x4096xbf16>, tensor<4096x16xbf16>
  return %a, %b : tensor<2048x768xbf16>, tensor<2048x16xbf16>
}

// -----

// An output projection, 2048 tokens x 768 -> 4096: its output gradient
// (8.4M elements) is most of what it quantizes. Row-wise quantizes dy a
// second time, along the tokens, for the weight gradient: -5.6 us, it
// stays (+6.9 us if dy were quantized once). Tensorwise quantizes it once:
// +13.9 us.
// ONE-LABEL: func.func @forward
// ONE-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = ["l0.o"]
// TP8-LABEL: func.func @forward
// TP8-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = ["l0.o"]
// TENSOR-LABEL: func.func @forward
// TENSOR-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = []
func.func @forward(%x: tensor<2048x768xbf16> {weft.input = "x"})
    -> (tensor<2048x4096xbf16> {weft.output = "y"}) {
  %w = weft.param "l0.o" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<768x4096xbf16>
  %y = weft.matmul %x, %w : tensor<2048x768xbf16>, tensor<768x4096xbf16>
  return %y : tensor<2048x4096xbf16>
}

// -----

// Expert GEMMs (two experts each) under row-wise: the rows and the output
// gradient are quantized again in tiles of each expert's rows for the
// weight gradient, the weight along its output features for the input
// gradient, so every operand counts twice. 4096 rows x 768 -> 4096: -17.6
// us, they stay (+12.1 us with the rows and dy counted once); 8192 rows x
// 2048 -> 4096: +95.7 us; 8192 rows x 2048 -> 1024: -8.9 us, they stay
// (+16.1 us with the rows alone counted once). Per-tensor recipes leave
// expert GEMMs alone.
// ONE-LABEL: func.func @forward
// ONE-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = ["l0.experts.w1", "l0.experts.w3"]
// ONE: weft.grouped_matmul %arg0, %{{.*}}, %arg3 : tensor<4096x768xbf16>
// ONE: %[[Q:.*]] = weft.fp8_quantize %arg1
// ONE: weft.grouped_matmul %[[Q]], %{{.*}}, %arg3 : tensor<8192x2048xbf16>
// ONE: weft.grouped_matmul %arg2, %{{.*}}, %arg3 : tensor<8192x2048xbf16>
// TENSOR-LABEL: func.func @forward
// TENSOR-SAME: weft.fp8_gemms = 0 : i64, weft.fp8_no_gain = []
func.func @forward(%x1: tensor<4096x768xbf16> {weft.input = "x1"},
                   %x2: tensor<8192x2048xbf16> {weft.input = "x2"},
                   %x3: tensor<8192x2048xbf16> {weft.input = "x3"},
                   %counts: tensor<2xi32> {weft.input = "counts"})
    -> (tensor<4096x4096xbf16> {weft.output = "y1"}, tensor<8192x4096xbf16> {weft.output = "y2"},
        tensor<8192x1024xbf16> {weft.output = "y3"}) {
  %w1 = weft.param "l0.experts.w1" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<2x768x4096xbf16>
  %w2 = weft.param "l0.experts.w2" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<2x2048x4096xbf16>
  %y1 = weft.grouped_matmul %x1, %w1, %counts : tensor<4096x768xbf16>, tensor<2x768x4096xbf16>, tensor<2xi32>
  %y2 = weft.grouped_matmul %x2, %w2, %counts : tensor<8192x2048xbf16>, tensor<2x2048x4096xbf16>, tensor<2xi32>
  %w3 = weft.param "l0.experts.w3" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<2x2048x1024xbf16>
  %y3 = weft.grouped_matmul %x3, %w3, %counts : tensor<8192x2048xbf16>, tensor<2x2048x1024xbf16>, tensor<2xi32>
  return %y1, %y2, %y3 : tensor<4096x4096xbf16>, tensor<8192x4096xbf16>, tensor<8192x1024xbf16>
}

// -----

// An f32 model is judged against the device's f32 rate (67 TFLOP/s), and
// its quantizations read 4 bytes an element: 2048 x 4096 -> 16, which
// loses in bf16 (about -8 us), gains about 150 us.
// ONE-LABEL: func.func @forward
// ONE-SAME: weft.fp8_gemms = 1 : i64, weft.fp8_no_gain = []
func.func @forward(%x: tensor<2048x4096xf32> {weft.input = "x"})
    -> (tensor<2048x16xf32> {weft.output = "y"}) {
  %w = weft.param "l0.narrow" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<4096x16xf32>
  %y = weft.matmul %x, %w : tensor<2048x4096xf32>, tensor<4096x16xf32>
  return %y : tensor<2048x16xf32>
}

// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda fp8-storage=off' | FileCheck %s --check-prefix=OFF
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=fp8-storage=on' | FileCheck %s --check-prefix=CPU
// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s --check-prefix=OFF
// RUN: not weft-opt %s -split-input-file '-weft-lower-to-sched=fp8-storage=maybe' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: weft-lower-to-sched: fp8-storage must be 'auto', 'on' or 'off', not 'maybe'

// A linear layer's forward and backward GEMMs over per-tensor FP8 values:
// x is read as A [m, k] (as stored) and, by the weight gradient, as A of
// x^T (a transposed copy of the [16, 64] reshape); w as B of the forward
// (transposed: B is read [n, k]) and of the input gradient (as stored);
// dy as A of the input gradient and as B of the weight gradient
// (transposed). Each layout is cast once, with its own 1/s; the f32
// quantized values are never written.
// CHECK-LABEL: sched.program @linear
// CHECK-NOT: sched.fp8_quantize
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[X:.*]], %[[SX:.*]] : !sched.buffer<2x8x64xf32>, !sched.buffer<1x1x1xf32>, !sched.buffer<2x8x64xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[XT:.*]], %[[SXT:.*]] {transpose} : !sched.buffer<16x64xf32>, !sched.buffer<1x1x1xf32>, !sched.buffer<64x16xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[W:.*]], %[[SW:.*]] : !sched.buffer<64x32xf32>, !sched.buffer<1x1xf32>, !sched.buffer<64x32xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[WT:.*]], %[[SWT:.*]] {transpose} : !sched.buffer<64x32xf32>, !sched.buffer<1x1xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK: sched.gemm %[[X]], %[[WT]] -> %{{.*}} scales(%[[SX]], %[[SWT]] : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [16, 32, 64] batch 1 ld [64, 64, 32] strides [0, 0, 0] epilogue none transpose_b : <2x8x64xf8E4M3FN>, <32x64xf8E4M3FN> -> <2x8x32xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[D:.*]], %[[SD:.*]] : !sched.buffer<2x8x32xf32>, !sched.buffer<1x1x1xf32>, !sched.buffer<2x8x32xf8E5M2>, !sched.buffer<1xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[DT:.*]], %[[SDT:.*]] {transpose} : !sched.buffer<16x32xf32>, !sched.buffer<1x1x1xf32>, !sched.buffer<32x16xf8E5M2>, !sched.buffer<1xf32>
// CHECK: sched.gemm %[[D]], %[[W]] -> %{{.*}} scales(%[[SD]], %[[SW]] : {{.*}}) mnk [16, 64, 32] batch 1 ld [32, 32, 64] {{.*}} transpose_b : <2x8x32xf8E5M2>, <64x32xf8E4M3FN> -> <2x8x64xf32>
// CHECK: sched.gemm %[[XT]], %[[DT]] -> %{{.*}} scales(%[[SXT]], %[[SDT]] : {{.*}}) mnk [64, 32, 16] batch 1 ld [16, 16, 32] {{.*}} transpose_b : <64x16xf8E4M3FN>, <32x16xf8E5M2> -> <64x32xf32>
// OFF-LABEL: sched.program @linear
// OFF-NOT: sched.fp8_cast
// OFF-NOT: scales(
// OFF: sched.fp8_quantize
// CPU-LABEL: sched.program @linear
// CPU: sched.fp8_cast
// CPU: scales(
func.func @linear(%x: tensor<2x8x64xf32>, %w: tensor<64x32xf32>, %dy: tensor<2x8x32xf32>)
    -> (tensor<2x8x32xf32>, tensor<2x8x64xf32>, tensor<64x32xf32>) {
  %ax = weft.fp8_amax %x : tensor<2x8x64xf32> -> tensor<1x1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<2x8x64xf32>, tensor<1x1x1xf32>
  %aw = weft.fp8_amax %w : tensor<64x32xf32> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x32xf32>, tensor<1x1xf32>
  %y = weft.matmul %qx, %qw : tensor<2x8x64xf32>, tensor<64x32xf32>
  %ad = weft.fp8_amax %dy : tensor<2x8x32xf32> -> tensor<1x1x1xf32>
  %qd = weft.fp8_quantize %dy, %ad {format = f8E5M2} : tensor<2x8x32xf32>, tensor<1x1x1xf32>
  %dx = weft.matmul %qd, %qw transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32>
  %x2 = weft.reshape %qx : tensor<2x8x64xf32> -> tensor<16x64xf32>
  %d2 = weft.reshape %qd : tensor<2x8x32xf32> -> tensor<16x32xf32>
  %dw = weft.matmul %x2, %d2 transpose_lhs : tensor<16x64xf32>, tensor<16x32xf32>
  return %y, %dx, %dw : tensor<2x8x32xf32>, tensor<2x8x64xf32>, tensor<64x32xf32>
}

// -----

// A bf16 model's quantizations (weft-fp8 quantizes bf16 as stored): on the
// GPU the maxima and the casts read the bf16 tensors themselves, no copy
// widening them; the values path (OFF) widens for sched.fp8_quantize,
// which computes in f32, and the CPU widens for every reader.
// CHECK-LABEL: sched.program @linear_bf16
// CHECK-NOT: sched.copy
// CHECK: sched.fp8_amax %arg0, %[[AX:.*]] : !sched.buffer<16x64xbf16>, !sched.buffer<1x1xf32>
// CHECK-NOT: sched.copy
// CHECK: sched.fp8_cast %arg0, %[[AX]], {{.*}} : !sched.buffer<16x64xbf16>, !sched.buffer<1x1xf32>, !sched.buffer<16x64xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK-NOT: sched.copy
// CHECK: sched.fp8_amax %arg1, %[[AW:.*]] : !sched.buffer<64x32xbf16>, !sched.buffer<1x1xf32>
// CHECK-NOT: sched.copy
// CHECK: sched.fp8_cast %arg1, %[[AW]], {{.*}} {transpose} : !sched.buffer<64x32xbf16>, !sched.buffer<1x1xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<1xf32>
// CHECK-NOT: sched.copy
// CHECK: sched.return
// OFF-LABEL: sched.program @linear_bf16
// OFF: sched.copy %arg0 -> %{{.*}} sizes [1024] {{.*}} : <16x64xbf16> -> <16x64xf32>
// OFF: sched.fp8_quantize %{{.*}} : !sched.buffer<16x64xf32>, !sched.buffer<1x1xf32>, !sched.buffer<16x64xf32>
// CPU-LABEL: sched.program @linear_bf16
// CPU: sched.copy %arg0 -> %[[X:.*]] sizes [1024] {{.*}} : <16x64xbf16> -> <16x64xf32>
// CPU: sched.fp8_amax %[[X]]
func.func @linear_bf16(%x: tensor<16x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<16x32xbf16> {
  %ax = weft.fp8_amax %x : tensor<16x64xbf16> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xbf16>, tensor<1x1xf32>
  %aw = weft.fp8_amax %w : tensor<64x32xbf16> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x32xbf16>, tensor<1x1xf32>
  %y = weft.matmul %qx, %qw : tensor<16x64xbf16>, tensor<64x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Blocks that coincide: x's rows of 128 are 1 x 128 tiles too, and a
// 128 x 128 weight is one block and one 128 x 128 block. The planner
// narrows each to what its partner pairs with: 1 x 128 by 128 x 128 (not
// rows by a tensor, which cuBLASLt does not pair).
// CHECK-LABEL: sched.program @coinciding_blocks
// CHECK: sched.fp8_cast {{.*}} {scale_mode = "vec128"} : !sched.buffer<256x128xbf16>, !sched.buffer<256x1xf32>
// CHECK: sched.fp8_cast {{.*}} {scale_mode = "blk128"} : !sched.buffer<128x128xbf16>, !sched.buffer<1x1xf32>, !sched.buffer<128x128xf8E4M3FN>, !sched.buffer<4xf32>
// CHECK: sched.gemm {{.*}} {scale_modes = ["vec128", "blk128"]}
func.func @coinciding_blocks(%x: tensor<2x128x128xbf16>, %w: tensor<128x128xbf16>) -> tensor<2x128x128xbf16> {
  %ax = weft.fp8_amax %x : tensor<2x128x128xbf16> -> tensor<2x128x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<2x128x128xbf16>, tensor<2x128x1xf32>
  %aw = weft.fp8_amax %w : tensor<128x128xbf16> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<128x128xbf16>, tensor<1x1xf32>
  %y = weft.matmul %qx, %qw transpose_rhs : tensor<2x128x128xbf16>, tensor<128x128xbf16>
  return %y : tensor<2x128x128xbf16>
}

// -----

// What keeps the dequantized values: a quantization read by anything but
// a GEMM (here returned), a GEMM whose other operand is not FP8 (so its
// partner falls back too), blocked scales (rowwise), and a GEMM whose m is
// not a multiple of 16 (cuBLASLt's and torch._scaled_mm's rule).
// CHECK-LABEL: sched.program @fallbacks
// CHECK-NOT: sched.fp8_cast
// CHECK-NOT: scales(
// CHECK: sched.return
func.func @fallbacks(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %v: tensor<64x32xf32>, %r: tensor<8x64xf32>)
    -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>) {
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<1x1xf32>
  %aw = weft.fp8_amax %w : tensor<64x32xf32> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x32xf32>, tensor<1x1xf32>
  %y = weft.matmul %qx, %qw : tensor<16x64xf32>, tensor<64x32xf32>
  %z = weft.matmul %x, %qw : tensor<16x64xf32>, tensor<64x32xf32>
  %rx = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<16x1xf32>
  %qrx = weft.fp8_quantize %x, %rx {format = f8E4M3FN} : tensor<16x64xf32>, tensor<16x1xf32>
  %av = weft.fp8_amax %v : tensor<64x32xf32> -> tensor<1x1xf32>
  %qv = weft.fp8_quantize %v, %av {format = f8E4M3FN} : tensor<64x32xf32>, tensor<1x1xf32>
  %u = weft.matmul %qrx, %qv : tensor<16x64xf32>, tensor<64x32xf32>
  %ar = weft.fp8_amax %r : tensor<8x64xf32> -> tensor<1x1xf32>
  %qr = weft.fp8_quantize %r, %ar {format = f8E4M3FN} : tensor<8x64xf32>, tensor<1x1xf32>
  %av2 = weft.fp8_amax %v : tensor<64x32xf32> -> tensor<1x1xf32>
  %qv2 = weft.fp8_quantize %v, %av2 {format = f8E4M3FN} : tensor<64x32xf32>, tensor<1x1xf32>
  %s = weft.matmul %qr, %qv2 : tensor<8x64xf32>, tensor<64x32xf32>
  return %qx, %y, %z, %u, %s : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>
}

// -----

// CHECK-LABEL: sched.program @two_e5m2
// CHECK-NOT: sched.fp8_cast
func.func @two_e5m2(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>) -> tensor<32x32xf32> {
  %aa = weft.fp8_amax %a : tensor<16x32xf32> -> tensor<1x1xf32>
  %qa = weft.fp8_quantize %a, %aa {format = f8E5M2} : tensor<16x32xf32>, tensor<1x1xf32>
  %ab = weft.fp8_amax %b : tensor<16x32xf32> -> tensor<1x1xf32>
  %qb = weft.fp8_quantize %b, %ab {format = f8E5M2} : tensor<16x32xf32>, tensor<1x1xf32>
  %y = weft.matmul %qa, %qb transpose_lhs : tensor<16x32xf32>, tensor<16x32xf32>
  return %y : tensor<32x32xf32>
}

// -----

// MXFP8: 1 x 32 blocks along k with power-of-two scales. No cuBLASLt mode
// takes them before Blackwell; they are "vec32" casts (pow2_scales, so the
// codes are the ones weft.fp8_quantize rounds to) and a GEMM Weft's own
// kernel runs. The weight, blocked 32 x 1 along its rows (k), is cast
// transposed: B [n, k] with 1 x 32 blocks.
// CHECK-LABEL: sched.program @mxfp8
// CHECK: sched.fp8_cast {{.*}} {pow2_scales, scale_mode = "vec32"} : !sched.buffer<32x64xf32>, !sched.buffer<32x2xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<64xf32>
// CHECK: sched.fp8_cast {{.*}} {pow2_scales, scale_mode = "vec32", transpose} : !sched.buffer<64x48xf32>, !sched.buffer<2x48xf32>, !sched.buffer<48x64xf8E4M3FN>, !sched.buffer<96xf32>
// CHECK: sched.gemm {{.*}} scales({{.*}} : !sched.buffer<64xf32>, !sched.buffer<96xf32>) mnk [32, 48, 64] {{.*}} transpose_b {scale_modes = ["vec32", "vec32"]}
// OFF-LABEL: sched.program @mxfp8
// OFF-NOT: sched.fp8_cast
// OFF: sched.fp8_quantize {{.*}} {format = "f8e4m3fn", pow2_scales}
func.func @mxfp8(%x: tensor<32x64xf32>, %w: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %ax = weft.fp8_amax %x : tensor<32x64xf32> -> tensor<32x2xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN, pow2_scales} : tensor<32x64xf32>, tensor<32x2xf32>
  %aw = weft.fp8_amax %w : tensor<64x48xf32> -> tensor<2x48xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN, pow2_scales} : tensor<64x48xf32>, tensor<2x48xf32>
  %y = weft.matmul %qx, %qw : tensor<32x64xf32>, tensor<64x48xf32>
  return %y : tensor<32x48xf32>
}

// -----

// k = 32: a 1 x 32 block is a whole row, so both operands may take
// row-wise scales (cuBLASLt's outer vectors) as well as "vec32"; the
// planner takes the first mode both have, rows, with power-of-two scales.
// CHECK-LABEL: sched.program @mxfp8_one_block_a_row
// CHECK: sched.fp8_cast {{.*}} {pow2_scales, scale_mode = "rows"}
// CHECK: sched.fp8_cast {{.*}} {pow2_scales, scale_mode = "rows", transpose}
// CHECK: sched.gemm {{.*}} {scale_modes = ["rows", "rows"]}
func.func @mxfp8_one_block_a_row(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %ax = weft.fp8_amax %x : tensor<16x32xf32> -> tensor<16x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN, pow2_scales} : tensor<16x32xf32>, tensor<16x1xf32>
  %aw = weft.fp8_amax %w : tensor<32x16xf32> -> tensor<1x16xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN, pow2_scales} : tensor<32x16xf32>, tensor<1x16xf32>
  %y = weft.matmul %qx, %qw : tensor<16x32xf32>, tensor<32x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// An expert layer (weft.grouped_matmul): the forward reads each expert's
// weight [E, M, K] as stored (its 128 x 128 blocks are "blk128" of the
// matrix [E * M, K]); the input gradient reads it as [E, K, M], cast with
// each expert's matrix transposed on its own. The weight gradient, which
// sums each expert's rows, is no GEMM on codes: it reads the dequantized
// values, which the output gradient's quantization writes beside its
// codes. A weight quantization that straddles the experts (one 256 x 128
// block over both) keeps the values path, and so does its partner.
// CHECK-LABEL: sched.program @experts
// CHECK: sched.fp8_cast %{{.*}}, %{{.*}}, %[[X:.*]], %[[SX:.*]] {scale_mode = "vec128"} : !sched.buffer<64x128xf32>, !sched.buffer<64x1xf32>, !sched.buffer<64x128xf8E4M3FN>, !sched.buffer<64xf32>
// CHECK: sched.fp8_quantize %{{.*}}, %{{.*}}, %[[XV:.*]] {format = "f8e4m3fn"} : !sched.buffer<64x128xf32>, !sched.buffer<64x1xf32>, !sched.buffer<64x128xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %[[WT:.*]], %[[SWT:.*]] {scale_mode = "blk128", transpose} : !sched.buffer<2x128x128xf32>, !sched.buffer<2x1x1xf32>, !sched.buffer<2x128x128xf8E4M3FN>, !sched.buffer<8xf32>
// CHECK-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %[[SW:.*]] {scale_mode = "blk128"} : !sched.buffer<256x128xf32>, !sched.buffer<2x1xf32>, !sched.buffer<256x128xf8E4M3FN>, !sched.buffer<8xf32>
// CHECK: sched.grouped_matmul %[[X]], %{{.*}}, %{{.*}}, %{{.*}} scales(%[[SX]], %[[SW]] : !sched.buffer<64xf32>, !sched.buffer<8xf32>) {scale_modes = ["vec128", "blk128"], transpose_rhs = true} : !sched.buffer<64x128xf8E4M3FN>, !sched.buffer<2x128x128xf8E4M3FN>
// CHECK: sched.fp8_quantize %{{.*}}, %{{.*}}, %[[DV:.*]] {format
// CHECK: sched.grouped_matmul %{{.*}}, %[[WT]], %{{.*}}, %{{.*}} scales(%{{.*}}, %[[SWT]] : !sched.buffer<64xf32>, !sched.buffer<8xf32>) {scale_modes = ["vec128", "blk128"], transpose_rhs = true}
// CHECK: sched.grouped_matmul_wgrad %[[DV]], %[[XV]], {{.*}} : !sched.buffer<64x128xf32>, !sched.buffer<64x128xf32>
// CHECK: sched.fp8_quantize {{.*}} : !sched.buffer<2x128x128xf32>, !sched.buffer<1x2x1xf32>
// CHECK: sched.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs = true} : !sched.buffer<64x128xf32>, !sched.buffer<2x128x128xf32>
// OFF-LABEL: sched.program @experts
// OFF-NOT: sched.fp8_cast
// OFF-NOT: scales(
func.func @experts(%x: tensor<64x128xf32>, %w: tensor<2x128x128xf32>, %dy: tensor<64x128xf32>, %n: tensor<2xi32>)
    -> (tensor<64x128xf32>, tensor<64x128xf32>, tensor<2x128x128xf32>, tensor<64x128xf32>) {
  %ax = weft.fp8_amax %x : tensor<64x128xf32> -> tensor<64x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<64x128xf32>, tensor<64x1xf32>
  %aw = weft.fp8_amax %w : tensor<2x128x128xf32> -> tensor<2x1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<2x1x1xf32>
  %y = weft.grouped_matmul %qx, %qw, %n transpose_rhs : tensor<64x128xf32>, tensor<2x128x128xf32>, tensor<2xi32>
  %ad = weft.fp8_amax %dy : tensor<64x128xf32> -> tensor<64x1xf32>
  %qd = weft.fp8_quantize %dy, %ad {format = f8E4M3FN} : tensor<64x128xf32>, tensor<64x1xf32>
  %dx = weft.grouped_matmul %qd, %qw, %n : tensor<64x128xf32>, tensor<2x128x128xf32>, tensor<2xi32>
  %dw = weft.grouped_matmul_wgrad %qd, %qx, %n experts = 2 : tensor<64x128xf32>, tensor<64x128xf32>, tensor<2xi32>
  %as = weft.fp8_amax %w : tensor<2x128x128xf32> -> tensor<1x2x1xf32>
  %qs = weft.fp8_quantize %w, %as {format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<1x2x1xf32>
  %qx2 = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<64x128xf32>, tensor<64x1xf32>
  %z = weft.grouped_matmul %qx2, %qs, %n transpose_rhs : tensor<64x128xf32>, tensor<2x128x128xf32>, tensor<2xi32>
  return %y, %dx, %dw, %z : tensor<64x128xf32>, tensor<64x128xf32>, tensor<2x128x128xf32>, tensor<64x128xf32>
}

// -----

// One expert: the weight read transposed is still a batch of one
// ([1, 32, 64] codes, rank 3, as sched.grouped_matmul takes it).
// CHECK-LABEL: sched.program @one_expert
// CHECK: sched.fp8_cast {{.*}} {pow2_scales, scale_mode = "vec32", transpose} : !sched.buffer<1x64x32xf32>, !sched.buffer<1x2x32xf32>, !sched.buffer<1x32x64xf8E4M3FN>, !sched.buffer<64xf32>
// CHECK: sched.grouped_matmul {{.*}} {scale_modes = ["vec32", "vec32"], transpose_rhs = true} : !sched.buffer<32x64xf8E5M2>, !sched.buffer<1x32x64xf8E4M3FN>, !sched.buffer<1xi32>, !sched.buffer<32x32xf32>
func.func @one_expert(%dy: tensor<32x64xf32>, %w: tensor<1x64x32xf32>, %n: tensor<1xi32>) -> tensor<32x32xf32> {
  %ad = weft.fp8_amax %dy : tensor<32x64xf32> -> tensor<32x2xf32>
  %qd = weft.fp8_quantize %dy, %ad {format = f8E5M2, pow2_scales} : tensor<32x64xf32>, tensor<32x2xf32>
  %aw = weft.fp8_amax %w : tensor<1x64x32xf32> -> tensor<1x2x32xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN, pow2_scales} : tensor<1x64x32xf32>, tensor<1x2x32xf32>
  %dx = weft.grouped_matmul %qd, %qw, %n : tensor<32x64xf32>, tensor<1x64x32xf32>, tensor<1xi32>
  return %dx : tensor<32x32xf32>
}

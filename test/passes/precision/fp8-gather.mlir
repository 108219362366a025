// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(weft-fp8-gather))' | FileCheck %s
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(weft-fp8-gather),weft-lower-to-sched{target=cuda})' | FileCheck %s --check-prefix=SCHED
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(weft-fp8-gather{params=false}))' | FileCheck %s --check-prefix=PARAMS

// A ZeRO-3 weight gathered for a per-tensor quantization: the maximum is
// the shard's, max all-reduced over dp (keeping delayed scaling's history
// name), the quantization reads the shard, and the quantized shard is
// gathered. Lowered with FP8 storage, the gather moves FP8 codes, and the
// GEMM that reads the weight as B [n, k] reads a transposed copy of them.
// CHECK-LABEL: func.func @zero3
// CHECK: %[[A0:.*]] = weft.fp8_amax %[[S:[^ ]*]] {weft.amax_history = "w.hist"} : tensor<32x128xf32> -> tensor<1x1xf32>
// CHECK: %[[A:.*]] = weft.all_reduce max %[[A0]] over @mesh ["dp"] : tensor<1x1xf32>
// CHECK: %[[Q0:.*]] = weft.fp8_quantize %[[S]], %[[A]] {format = f8E4M3FN} : tensor<32x128xf32>, tensor<1x1xf32>
// CHECK: %[[Q:.*]] = weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<32x128xf32> -> tensor<64x128xf32>
// CHECK: weft.matmul %{{.*}}, %[[Q]] :
// CHECK-NOT: weft.all_gather
// SCHED-LABEL: sched.program @zero3
// SCHED: sched.collective all_reduce max
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %[[CODES:.*]], %[[SW:.*]] : !sched.buffer<32x128xf32>, !sched.buffer<1x1xf32>, !sched.buffer<32x128xf8E4M3FN>, !sched.buffer<1xf32>
// SCHED: sched.collective all_gather none %[[CODES]] -> %[[WHOLE:.*]] over @mesh ["dp"] : <32x128xf8E4M3FN> -> <64x128xf8E4M3FN>
// SCHED: sched.copy %[[WHOLE]] -> %[[WT:.*]] sizes [1, 64, 128] src [0, 8192, 128, 1] dst [0, 8192, 1, 64] : <64x128xf8E4M3FN> -> <128x64xf8E4M3FN>
// SCHED: sched.gemm %{{.*}}, %[[WT]] -> %{{.*}} scales(%{{.*}}, %[[SW]] : {{.*}}) mnk [16, 128, 64] {{.*}} transpose_b
// A parameter's gather stays with params=false (weft-gather-per-step's).
// PARAMS-LABEL: func.func @zero3
// PARAMS: weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<32x128xf32> -> tensor<64x128xf32>
// PARAMS: weft.fp8_amax %{{.*}} {weft.amax_history = "w.hist"} : tensor<64x128xf32> -> tensor<1x1xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @zero3(%x: tensor<16x64xf32>) -> tensor<16x128xf32> {
  %shard = weft.param "w" init(zeros) : tensor<32x128xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x128xf32> -> tensor<64x128xf32>
  %aw = weft.fp8_amax %w {weft.amax_history = "w.hist"} : tensor<64x128xf32> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x128xf32>, tensor<1x1xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<1x1xf32>
  %y = weft.matmul %qx, %qw : tensor<16x64xf32>, tensor<64x128xf32>
  return %y : tensor<16x128xf32>
}

// -----

// A row-wise weight [out, in] as Llama's (read as B [n, k], transpose_rhs):
// its blocks (rows) lie inside the shards, so each rank quantizes its
// shard by its own maxima, and the codes and the row scales gather. The
// input gradient's re-quantization (backward_block: one scale a column,
// along the rows) spans the shards: on the shard, its maxima max
// all-reduced over dp (weft.backward_amax_axes). Lowered, the backward
// re-quantization casts the shard transposed, [in, out / 2], and gathers
// its codes along k; every rank's column scales are the same.
// CHECK-LABEL: func.func @rows
// CHECK: %[[A0:.*]] = weft.fp8_amax %[[S:[^ ]*]] : tensor<32x64xf32> -> tensor<32x1xf32>
// CHECK-NEXT: %[[Q0:.*]] = weft.fp8_quantize %[[S]], %[[A0]] {backward_block = array<i64: 32, 1>, format = f8E4M3FN, weft.amax_mesh = @mesh, weft.backward_amax_axes = ["dp"]} : tensor<32x64xf32>, tensor<32x1xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK: weft.matmul %{{.*}}, %[[Q]] transpose_rhs
// CHECK-NOT: weft.all_gather
// SCHED-LABEL: sched.program @rows
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %[[CODES:.*]], %[[SW:.*]] {scale_mode = "rows"} : !sched.buffer<32x64xf32>, !sched.buffer<32x1xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<32xf32>
// SCHED: sched.collective all_gather none %[[CODES]] -> %[[WHOLE:.*]] over @mesh ["dp"] : <32x64xf8E4M3FN> -> <64x64xf8E4M3FN>
// SCHED: %[[WS:.*]] = sched.alloc{{.*}} : <64xf32>
// SCHED: %[[PART:.*]] = sched.view %[[SW]][0] : <32xf32> to <1x32xf32>
// SCHED: %[[ALL:.*]] = sched.view %[[WS]][0] : <64xf32> to <1x64xf32>
// SCHED: sched.collective all_gather none %[[PART]] -> %[[ALL]] over @mesh ["dp"] : <1x32xf32> -> <1x64xf32>
// SCHED: sched.gemm %{{.*}}, %[[WHOLE]] -> %{{.*}} scales(%{{.*}}, %[[WS]] : {{.*}}) mnk [16, 64, 64] {{.*}} transpose_b {scale_modes = ["rows", "rows"]}
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @rows(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %shard = weft.param "w" init(zeros) : tensor<32x64xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %aw = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<64x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN, backward_block = array<i64: 64, 1>} : tensor<64x64xf32>, tensor<64x1xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<16x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<16x1xf32>
  %y = weft.matmul %qx, %qw transpose_rhs : tensor<16x64xf32>, tensor<64x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// A row-wise weight [in, out] as GPT-2's (read as B [n, k] transposed):
// one block a column spans the shards, so the shard's column maxima are
// max all-reduced over dp. Lowered, each rank casts its shard transposed,
// [out, in / 2], with the (common) column scales, and the codes gather
// along k: into [2, out, in / 2] blocks, then copied into place.
// CHECK-LABEL: func.func @columns
// CHECK: %[[A0:.*]] = weft.fp8_amax %[[S:[^ ]*]] : tensor<32x64xf32> -> tensor<1x64xf32>
// CHECK-NEXT: %[[A:.*]] = weft.all_reduce max %[[A0]] over @mesh ["dp"] : tensor<1x64xf32>
// CHECK-NEXT: %[[Q0:.*]] = weft.fp8_quantize %[[S]], %[[A]] {format = f8E4M3FN} : tensor<32x64xf32>, tensor<1x64xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// SCHED-LABEL: sched.program @columns
// SCHED: sched.collective all_reduce max
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %[[CODES:.*]], %[[SW:.*]] {scale_mode = "rows", transpose} : !sched.buffer<32x64xf32>, !sched.buffer<1x64xf32>, !sched.buffer<64x32xf8E4M3FN>, !sched.buffer<64xf32>
// SCHED: sched.collective all_gather none %[[CODES]] -> %[[BLOCKS:.*]] over @mesh ["dp"] : <64x32xf8E4M3FN> -> <4096xf8E4M3FN>
// SCHED: sched.copy %[[BLOCKS]] -> %[[WHOLE:.*]] sizes [2, 64, 32] src [0, 2048, 32, 1] dst [0, 32, 64, 1] : <4096xf8E4M3FN> -> <64x64xf8E4M3FN>
// SCHED-NOT: all_gather
// SCHED: sched.gemm %{{.*}}, %[[WHOLE]] -> %{{.*}} scales(%{{.*}}, %[[SW]] : {{.*}}) mnk [16, 64, 64] {{.*}} transpose_b {scale_modes = ["rows", "rows"]}
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @columns(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %shard = weft.param "w" init(zeros) : tensor<32x64xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %aw = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<1x64xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x64xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<16x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<16x1xf32>
  %y = weft.matmul %qx, %qw : tensor<16x64xf32>, tensor<64x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// MXFP8's 1 x 32 blocks of a weight [out, in]: inside the shards. The
// scales of an operand [rows, k] lie as [k / 32, rows], so the shards'
// gather along its inner dimension: into blocks, then copied into place.
// The maxima of the whole, which a reader other than the quantization
// wants here, are the shards' maxima gathered.
// CHECK-LABEL: func.func @mx
// CHECK: %[[A0:.*]] = weft.fp8_amax %[[S:[^ ]*]] : tensor<32x64xf32> -> tensor<32x2xf32>
// CHECK-NEXT: %[[A:.*]] = weft.all_gather %[[A0]] over @mesh ["dp"] dim 0 : tensor<32x2xf32> -> tensor<64x2xf32>
// CHECK-NEXT: %[[Q0:.*]] = weft.fp8_quantize %[[S]], %[[A0]] {format = f8E4M3FN, pow2_scales} : tensor<32x64xf32>, tensor<32x2xf32>
// CHECK-NEXT: weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK: return %{{.*}}, %[[A]]
// SCHED-LABEL: sched.program @mx
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %[[SW:.*]] {pow2_scales, scale_mode = "vec32"} : !sched.buffer<32x64xf32>, !sched.buffer<32x2xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<64xf32>
// SCHED: %[[WS:.*]] = sched.alloc{{.*}} : <128xf32>
// SCHED: %[[PART:.*]] = sched.view %[[SW]][0] : <64xf32> to <2x32xf32>
// SCHED: %[[ALL:.*]] = sched.view %[[WS]][0] : <128xf32> to <2x64xf32>
// SCHED: sched.collective all_gather none %[[PART]] -> %[[BLOCKS:.*]] over @mesh ["dp"] : <2x32xf32> -> <128xf32>
// SCHED: sched.copy %[[BLOCKS]] -> %[[ALL]] sizes [2, 2, 32] src [0, 64, 32, 1] dst [0, 32, 64, 1]
// SCHED: sched.gemm {{.*}} scales(%{{.*}}, %[[WS]] : {{.*}}) mnk [16, 64, 64] {{.*}} transpose_b {scale_modes = ["vec32", "vec32"]}
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @mx(%x: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<64x2xf32>) {
  %shard = weft.param "w" init(zeros) : tensor<32x64xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %aw = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<64x2xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN, pow2_scales} : tensor<64x64xf32>, tensor<64x2xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<16x2xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN, pow2_scales} : tensor<16x64xf32>, tensor<16x2xf32>
  %y = weft.matmul %qx, %qw transpose_rhs : tensor<16x64xf32>, tensor<64x64xf32>
  return %y, %aw : tensor<16x64xf32>, tensor<64x2xf32>
}

// -----

// What stays: a gather something else reads too (here the result); a
// block across two shards (32 rows, 48 a rank), forward or in the
// backward's re-quantization; an expert layer's quantization (group_rows),
// whose weight gradient re-quantizes its input whole.
// CHECK-LABEL: func.func @stays
// CHECK: %[[W:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[W]] : tensor<64x64xf32> -> tensor<1x1xf32>
// CHECK: %[[V:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[V]] : tensor<96x64xf32> -> tensor<3x1xf32>
// CHECK: %[[U:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[U]] : tensor<96x64xf32> -> tensor<96x1xf32>
// CHECK: %[[R:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[R]] : tensor<64x64xf32> -> tensor<64x1xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @stays(%s: tensor<32x64xf32>, %t: tensor<48x64xf32>, %e: tensor<32x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<96x64xf32>, tensor<96x64xf32>, tensor<64x64xf32>) {
  %w = weft.all_gather %s over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %aw = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x1xf32>
  %v = weft.all_gather %t over @mesh ["dp"] dim 0 : tensor<48x64xf32> -> tensor<96x64xf32>
  %av = weft.fp8_amax %v : tensor<96x64xf32> -> tensor<3x1xf32>
  %qv = weft.fp8_quantize %v, %av {format = f8E4M3FN} : tensor<96x64xf32>, tensor<3x1xf32>
  %u = weft.all_gather %t over @mesh ["dp"] dim 0 : tensor<48x64xf32> -> tensor<96x64xf32>
  %au = weft.fp8_amax %u : tensor<96x64xf32> -> tensor<96x1xf32>
  %qu = weft.fp8_quantize %u, %au {format = f8E4M3FN, backward_block = array<i64: 32, 1>} : tensor<96x64xf32>, tensor<96x1xf32>
  %r = weft.all_gather %e over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %ar = weft.fp8_amax %r : tensor<64x64xf32> -> tensor<64x1xf32>
  %qr = weft.fp8_quantize %r, %ar {format = f8E4M3FN, group_rows = 0 : i64} : tensor<64x64xf32>, tensor<64x1xf32>
  return %qw, %w, %qv, %qu, %qr : tensor<64x64xf32>, tensor<64x64xf32>, tensor<96x64xf32>, tensor<96x64xf32>, tensor<64x64xf32>
}

// -----

// A fused weight gathered whole and read through views (GPT-2's c_attn
// [in, 3, out], sliced into q, k and v and each reshaped to [in, out]): the
// gather sinks through the views, which keep its dimension whole, so each
// third is sliced from the shard, quantized there and gathered on its own.
// A view that cuts the gathered dimension keeps its gather.
// CHECK-LABEL: func.func @fused
// CHECK: %[[S:.*]] = weft.param "c_attn"
// CHECK-NEXT: %[[P0:.*]] = weft.slice %[[S]] [0, 0, 0] to [32, 1, 64] : tensor<32x3x64xf32>
// CHECK-NEXT: %[[R0:.*]] = weft.reshape %[[P0]] : tensor<32x1x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: %[[A0:.*]] = weft.fp8_amax %[[R0]] : tensor<32x64xf32> -> tensor<1x1xf32>
// CHECK-NEXT: %[[M0:.*]] = weft.all_reduce max %[[A0]] over @mesh ["dp"] : tensor<1x1xf32>
// CHECK-NEXT: %[[Q0:.*]] = weft.fp8_quantize %[[R0]], %[[M0]] {format = f8E4M3FN} : tensor<32x64xf32>, tensor<1x1xf32>
// CHECK-NEXT: %[[G0:.*]] = weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[P1:.*]] = weft.slice %[[S]] [0, 1, 0] to [32, 2, 64] : tensor<32x3x64xf32>
// CHECK: %[[G1:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK: weft.matmul %{{.*}}, %[[G0]]
// CHECK: weft.matmul %{{.*}}, %[[G1]]
// CHECK: %[[C:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: weft.slice %[[C]] [0, 0] to [48, 64]
// SCHED-LABEL: sched.program @fused
// SCHED-COUNT-2: sched.collective all_gather none %{{.*}} : <32x64xf8E4M3FN> -> <64x64xf8E4M3FN>
// PARAMS-LABEL: func.func @fused
// PARAMS: weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<32x3x64xf32> -> tensor<64x3x64xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @fused(%x: tensor<16x64xf32>, %c: tensor<32x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<48x64xf32>) {
  %shard = weft.param "c_attn" init(zeros) : tensor<32x3x64xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x3x64xf32> -> tensor<64x3x64xf32>
  %s0 = weft.slice %w [0, 0, 0] to [64, 1, 64] : tensor<64x3x64xf32>
  %w0 = weft.reshape %s0 : tensor<64x1x64xf32> -> tensor<64x64xf32>
  %a0 = weft.fp8_amax %w0 : tensor<64x64xf32> -> tensor<1x1xf32>
  %q0 = weft.fp8_quantize %w0, %a0 {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x1xf32>
  %s1 = weft.slice %w [0, 1, 0] to [64, 2, 64] : tensor<64x3x64xf32>
  %w1 = weft.reshape %s1 : tensor<64x1x64xf32> -> tensor<64x64xf32>
  %a1 = weft.fp8_amax %w1 : tensor<64x64xf32> -> tensor<1x1xf32>
  %q1 = weft.fp8_quantize %w1, %a1 {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x1xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<1x1xf32>
  %y0 = weft.matmul %qx, %q0 : tensor<16x64xf32>, tensor<64x64xf32>
  %y1 = weft.matmul %qx, %q1 : tensor<16x64xf32>, tensor<64x64xf32>
  %cw = weft.all_gather %c over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %cs = weft.slice %cw [0, 0] to [48, 64] : tensor<64x64xf32>
  %ca = weft.fp8_amax %cs : tensor<48x64xf32> -> tensor<1x1xf32>
  %cq = weft.fp8_quantize %cs, %ca {format = f8E4M3FN} : tensor<48x64xf32>, tensor<1x1xf32>
  return %y0, %y1, %cq : tensor<16x64xf32>, tensor<16x64xf32>, tensor<48x64xf32>
}

// -----

// A quantized shard gathered twice (the forward's and, after other work,
// the backward's again, as weft-reshard-after-forward makes it): the shard
// is cast once, where the quantization is, and each gather of its codes
// lowers where the gather is, so the whole FP8 weight is not held between.
// SCHED-LABEL: sched.program @twice
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %[[CODES:.*]], %{{.*}} : !sched.buffer<32x128xf32>
// SCHED-NOT: sched.fp8_cast {{.*}}32x128xf32
// SCHED: sched.collective all_gather none %[[CODES]] -> %[[G1:.*]] over
// SCHED: sched.copy %[[G1]] -> %[[T1:[^ ]*]]
// SCHED: sched.gemm %{{.*}}, %[[T1]] -> %{{.*}} scales
// SCHED: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} mnk [16, 128, 64] {{.*}} : <16x64xf32>, <64x128xf32> -> <16x128xf32>
// SCHED: sched.collective all_gather none %[[CODES]] -> %[[G2:.*]] over
// SCHED: sched.copy %[[G2]] -> %[[T2:[^ ]*]]
// SCHED: sched.gemm %{{.*}}, %[[T2]] -> %{{.*}} scales
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @twice(%x: tensor<16x64xf32>) -> (tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>) {
  %shard = weft.param "w" init(zeros) : tensor<32x128xf32>
  %plain = weft.param "v" init(zeros) : tensor<64x128xf32>
  %a0 = weft.fp8_amax %shard : tensor<32x128xf32> -> tensor<1x1xf32>
  %a = weft.all_reduce max %a0 over @mesh ["dp"] : tensor<1x1xf32>
  %q0 = weft.fp8_quantize %shard, %a {format = f8E4M3FN} : tensor<32x128xf32>, tensor<1x1xf32>
  %ax = weft.fp8_amax %x : tensor<16x64xf32> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x64xf32>, tensor<1x1xf32>
  %g1 = weft.all_gather %q0 over @mesh ["dp"] dim 0 : tensor<32x128xf32> -> tensor<64x128xf32>
  %y1 = weft.matmul %qx, %g1 : tensor<16x64xf32>, tensor<64x128xf32>
  %m = weft.matmul %x, %plain : tensor<16x64xf32>, tensor<64x128xf32>
  %g2 = weft.all_gather %q0 over @mesh ["dp"] dim 0 : tensor<32x128xf32> -> tensor<64x128xf32>
  %y2 = weft.matmul %qx, %g2 : tensor<16x64xf32>, tensor<64x128xf32>
  return %y1, %m, %y2 : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>
}

// -----

// A shard whose one block is its own (a 128 x 128 block, one a rank, its
// maximum not all-reduced) has a scale of its own on each rank: no one
// scale describes the gathered codes, and 128 x 128 block scales along k
// would need 512-column shards, so the GEMM reads values.
// SCHED-LABEL: sched.program @own
// SCHED-NOT: sched.fp8_cast
// SCHED: sched.fp8_quantize
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @own(%x: tensor<16x256xf32>) -> tensor<16x128xf32> {
  %shard = weft.param "w" init(zeros) : tensor<128x128xf32>
  %a0 = weft.fp8_amax %shard : tensor<128x128xf32> -> tensor<1x1xf32>
  %q0 = weft.fp8_quantize %shard, %a0 {format = f8E4M3FN} : tensor<128x128xf32>, tensor<1x1xf32>
  %g = weft.all_gather %q0 over @mesh ["dp"] dim 0 : tensor<128x128xf32> -> tensor<256x128xf32>
  %ax = weft.fp8_amax %x : tensor<16x256xf32> -> tensor<1x1xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x256xf32>, tensor<1x1xf32>
  %y = weft.matmul %qx, %g : tensor<16x256xf32>, tensor<256x128xf32>
  return %y : tensor<16x128xf32>
}

// -----

// DeepSeek-V3's blocks through gathers: a 128 x 128-blocked weight's
// 128-row shards and a sequence-parallel activation's 8-token shards of
// 1 x 128 tiles, each quantized on its rank. The weight's block scales
// ([rows / 128][4], padded) gather along their rows; the activation's
// tile scales ([k / 128][rows]) along their inner dimension, into blocks
// copied into place; the GEMM multiplies vec128 by blk128.
// SCHED-LABEL: sched.program @blocks
// SCHED-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %[[SW:.*]] {scale_mode = "blk128"} : !sched.buffer<128x256xf32>, !sched.buffer<1x2xf32>, !sched.buffer<128x256xf8E4M3FN>, !sched.buffer<4xf32>
// SCHED-DAG: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %[[SX:.*]] {scale_mode = "vec128"} : !sched.buffer<8x256xf32>, !sched.buffer<8x2xf32>, !sched.buffer<8x256xf8E4M3FN>, !sched.buffer<16xf32>
// SCHED-DAG: %[[PW:.*]] = sched.view %[[SW]][0] : <4xf32> to <1x4xf32>
// SCHED-DAG: sched.collective all_gather none %[[PW]] -> %{{.*}} over @mesh ["dp"] : <1x4xf32> -> <2x4xf32>
// SCHED-DAG: %[[PX:.*]] = sched.view %[[SX]][0] : <16xf32> to <2x8xf32>
// SCHED-DAG: sched.collective all_gather none %[[PX]] -> %[[BX:.*]] over @mesh ["dp"] : <2x8xf32> -> <32xf32>
// SCHED-DAG: sched.copy %[[BX]] -> %{{.*}} sizes [2, 2, 8] src [0, 16, 8, 1] dst [0, 8, 16, 1] : <32xf32> -> <2x16xf32>
// SCHED: sched.gemm {{.*}} mnk [16, 256, 256] {{.*}} {scale_modes = ["vec128", "blk128"]} : <16x256xf8E4M3FN>, <256x256xf8E4M3FN> -> <16x256xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @blocks(%xs: tensor<8x256xf32>) -> tensor<16x256xf32> {
  %shard = weft.param "w" init(zeros) : tensor<128x256xf32>
  %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<128x256xf32> -> tensor<256x256xf32>
  %aw = weft.fp8_amax %w : tensor<256x256xf32> -> tensor<2x2xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<256x256xf32>, tensor<2x2xf32>
  %x = weft.all_gather %xs over @mesh ["dp"] dim 0 : tensor<8x256xf32> -> tensor<16x256xf32>
  %ax = weft.fp8_amax %x : tensor<16x256xf32> -> tensor<16x2xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<16x256xf32>, tensor<16x2xf32>
  %y = weft.matmul %qx, %qw transpose_rhs : tensor<16x256xf32>, tensor<256x256xf32>
  return %y : tensor<16x256xf32>
}

// -----

// One gather of 128 x 128 blocks read as stored (the forward's B) and
// transposed (the input gradient's, as without weft-reshard-after-forward):
// the codes and block scales gather once, and the transposed read takes a
// transposing copy of each (the grid of scales [2][4] into [2][4]).
// SCHED-LABEL: sched.program @shared
// SCHED: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale_mode = "blk128"} : !sched.buffer<128x256xf32>
// SCHED-NOT: sched.fp8_cast {{.*}}128x256xf32
// SCHED: sched.collective all_gather none %{{.*}} -> %[[W:.*]] over @mesh ["dp"] : <128x256xf8E4M3FN> -> <256x256xf8E4M3FN>
// SCHED: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["dp"] : <1x4xf32> -> <2x4xf32>
// SCHED-NOT: sched.collective all_gather
// SCHED: sched.copy %[[W]] -> %[[WT:[^ ]*]] sizes [1, 256, 256]
// SCHED: sched.copy %[[SW:[^ ]*]] -> %[[SWT:[^ ]*]] sizes [1, 2, 2] src [0, 0, 4, 1] dst [0, 0, 1, 4] : <8xf32> -> <8xf32>
// SCHED: sched.gemm %{{.*}}, %[[W]] -> %{{.*}} scales(%{{.*}}, %[[SW]] : {{.*}}) {{.*}} transpose_b {scale_modes = ["vec128", "blk128"]}
// SCHED: sched.gemm %{{.*}}, %[[WT]] -> %{{.*}} scales(%{{.*}}, %[[SWT]] : {{.*}}) {{.*}} transpose_b {scale_modes = ["vec128", "blk128"]}
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @shared(%x: tensor<32x256xf32>, %d: tensor<32x256xf32>) -> (tensor<32x256xf32>, tensor<32x256xf32>) {
  %shard = weft.param "w" init(zeros) : tensor<128x256xf32>
  %aw = weft.fp8_amax %shard : tensor<128x256xf32> -> tensor<1x2xf32>
  %q0 = weft.fp8_quantize %shard, %aw {format = f8E4M3FN} : tensor<128x256xf32>, tensor<1x2xf32>
  %w = weft.all_gather %q0 over @mesh ["dp"] dim 0 : tensor<128x256xf32> -> tensor<256x256xf32>
  %ax = weft.fp8_amax %x : tensor<32x256xf32> -> tensor<32x2xf32>
  %qx = weft.fp8_quantize %x, %ax {format = f8E4M3FN} : tensor<32x256xf32>, tensor<32x2xf32>
  %y = weft.matmul %qx, %w transpose_rhs : tensor<32x256xf32>, tensor<256x256xf32>
  %ad = weft.fp8_amax %d : tensor<32x256xf32> -> tensor<32x2xf32>
  %qd = weft.fp8_quantize %d, %ad {format = f8E4M3FN} : tensor<32x256xf32>, tensor<32x2xf32>
  %z = weft.matmul %qd, %w : tensor<32x256xf32>, tensor<256x256xf32>
  return %y, %z : tensor<32x256xf32>, tensor<32x256xf32>
}

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

// What stays: a gather something else reads too (here the result), and
// blocked (per-row) scales, which differ between the shard and the whole.
// CHECK-LABEL: func.func @stays
// CHECK: %[[W:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[W]] : tensor<64x64xf32> -> tensor<1x1xf32>
// CHECK: %[[V:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0
// CHECK: weft.fp8_amax %[[V]] : tensor<64x64xf32> -> tensor<64x1xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @stays(%s: tensor<32x64xf32>, %t: tensor<32x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %w = weft.all_gather %s over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %aw = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<1x1xf32>
  %qw = weft.fp8_quantize %w, %aw {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x1xf32>
  %v = weft.all_gather %t over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
  %av = weft.fp8_amax %v : tensor<64x64xf32> -> tensor<64x1xf32>
  %qv = weft.fp8_quantize %v, %av {format = f8E4M3FN} : tensor<64x64xf32>, tensor<64x1xf32>
  return %qw, %w, %qv : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3,mb=2 fp8=blockwise fp8-keep=none target=cuda sched=true})' | FileCheck %s

// Blockwise FP8 under ZeRO-3 gathered once a step: each rank's 128 rows
// hold whole 128 x 128 blocks, so its maxima are its own. @gather encodes
// the shard by them and gathers the codes and the maxima straight into the
// states' storage (no assign), the one holding the codes. @accumulate's forward GEMM reads them transposed:
// a transposing copy of the codes, with the transposed 128 x 128 grid of
// scales taken from the gathered maxima (not the shard's), so no value is
// decoded or cast.
// CHECK-LABEL: sched.program @gather
// CHECK-DAG: %[[CODES:.*]] = sched.get @w.fp8.gathered : <256x256xf8E4M3FN>
// CHECK-DAG: %[[ALL:.*]] = sched.get @w.fp8.amax.gathered : <2x2xf32>
// CHECK: sched.fp8_amax %[[W:.*]], %[[A:.*]] : !sched.buffer<128x256xf32>, !sched.buffer<1x2xf32>
// CHECK: sched.collective all_gather none %[[A]] -> %[[ALL]] over @mesh ["dp"] {{.*}}: <1x2xf32> -> <2x2xf32>
// CHECK: sched.fp8_encode %[[W]], %[[A]], %[[C:.*]] : !sched.buffer<128x256xf32>, !sched.buffer<1x2xf32>, !sched.buffer<128x256xf8E4M3FN>
// CHECK: sched.collective all_gather none %[[C]] -> %[[CODES]] over @mesh ["dp"] {{.*}}: <128x256xf8E4M3FN> -> <256x256xf8E4M3FN>
// CHECK-NOT: all_gather
// CHECK-NOT: fp8_decode
// CHECK-NOT: sched.assign
// CHECK-LABEL: sched.program @accumulate
// CHECK: %[[S:.*]] = sched.get @w.fp8.gathered : <256x256xf8E4M3FN>
// CHECK-NEXT: %[[M:.*]] = sched.get @w.fp8.amax.gathered : <2x2xf32>
// CHECK-NOT: all_gather
// CHECK-NOT: fp8_decode
// CHECK: sched.copy %[[S]] -> %[[T:.*]] sizes [1, 256, 256] src [0, 65536, 256, 1] dst [0, 65536, 1, 256]
// CHECK: sched.fp8_scale_inv %[[S]], %[[M]], %[[I:.*]] {scale_mode = "blk128", transpose} : !sched.buffer<256x256xf8E4M3FN>, !sched.buffer<2x2xf32>, !sched.buffer<8xf32>
// CHECK: sched.gemm %{{.*}}, %[[T]] -> %{{.*}} scales(%{{.*}}, %[[I]] : {{.*}} {scale_modes = ["vec128", "blk128"]}
// CHECK-NOT: fp8_decode
func.func @forward(%x: tensor<512x256xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) {weft.layer = 0 : i64} : tensor<256x256xf32>
  %y = weft.matmul %x, %w : tensor<512x256xf32>, tensor<256x256xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<512x256xf32>
  return %loss : tensor<f32>
}

// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=mxfp8 keep=none},weft-apply-plan{plan=dp=4,zero=3},func.func(weft-sharding-propagate,weft-partition,weft-fp8-gather{params=false}),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step{fp8-codes=true},func.func(weft-fp8-gather{func=gather}))' | FileCheck %s

// MXFP8 under ZeRO-3 over four ranks, gathered once a step, with FP8
// storage's byte count (fp8-codes). The forward reads each weight [k, n]
// in 32 x 1 blocks along k, which the ranks' 16-row shards cut, so
// weft-fp8-gather cannot move the gather after that quantization: its
// codes would not move nor be held, and it counts in the model's type.
// "v" also has its input gradient's 1 x 32 blocks; the two states would
// then hold more than the values, so "v" keeps its values state. "w" (the
// first layer: no input gradient) has the forward's alone: one state,
// quantized from the gathered values.
// CHECK-LABEL: func.func @gather()
// CHECK-DAG: weft.param "w.fp8.gathered" init(zeros) state {weft.transient} : tensor<64x64xf32>
// CHECK-DAG: weft.param "v.gathered" init(zeros) state {weft.transient} : tensor<64x64xf32>
// CHECK-NOT: "v.fp8
// CHECK: %[[W:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<16x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: %[[A:.*]] = weft.fp8_amax %[[W]] : tensor<64x64xf32> -> tensor<2x64xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.fp8_quantize %[[W]], %[[A]]
// CHECK-NEXT: weft.assign "w.fp8.gathered", %[[Q]]
// CHECK-NOT: "v.fp8
// CHECK-LABEL: func.func @accumulate
func.func @forward(%x: tensor<64x64xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) {weft.layer = 0 : i64} : tensor<64x64xf32>
  %h = weft.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %v = weft.param "v" init(normal, 0.1) {weft.layer = 1 : i64} : tensor<64x64xf32>
  %y = weft.matmul %h, %v : tensor<64x64xf32>, tensor<64x64xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<64x64xf32>
  return %loss : tensor<f32>
}

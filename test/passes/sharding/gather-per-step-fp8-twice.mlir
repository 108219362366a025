// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=3},func.func(weft-sharding-propagate,weft-partition,weft-fp8-gather{params=false}),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step)' | FileCheck %s

// A weight quantized twice alike (two GEMMs each quantizing it by its own
// per-tensor maximum): one quantization in @gather, one state, which both
// of @accumulate's quantizations read; the second maximum's copy is not
// left behind. Two states would hold twice the weight: its values would
// be kept instead.
// CHECK-LABEL: func.func @gather()
// CHECK-NOT: w.gathered
// CHECK-NOT: fp8_1
// CHECK: %[[W:.*]] = weft.all_gather
// CHECK-NEXT: %[[A:.*]] = weft.fp8_amax %[[W]] : tensor<32x32xf32> -> tensor<1x1xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.fp8_quantize %[[W]], %[[A]] {format = f8E4M3FN}
// CHECK-NEXT: weft.assign "w.fp8.gathered", %[[Q]]
// CHECK-NEXT: weft.assign "w.fp8.amax.gathered", %[[A]]
// CHECK-NEXT: return
// CHECK-LABEL: func.func @accumulate
// CHECK-DAG: %[[V:.*]] = weft.param "w.fp8.gathered"
// CHECK-DAG: %[[VA:.*]] = weft.param "w.fp8.amax.gathered"
// CHECK-NOT: weft.fp8_amax %[[V]]
// CHECK: weft.fp8_quantize %[[V]], %[[VA]]
// CHECK-NOT: weft.fp8_amax %[[V]]
// CHECK: weft.fp8_quantize %[[V]], %[[VA]]
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<64x32xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) : tensor<32x32xf32>
  %a1 = weft.fp8_amax %w : tensor<32x32xf32> -> tensor<1x1xf32>
  %q1 = weft.fp8_quantize %w, %a1 {format = f8E4M3FN} : tensor<32x32xf32>, tensor<1x1xf32>
  %h = weft.matmul %x, %q1 : tensor<64x32xf32>, tensor<32x32xf32>
  %a2 = weft.fp8_amax %w : tensor<32x32xf32> -> tensor<1x1xf32>
  %q2 = weft.fp8_quantize %w, %a2 {format = f8E4M3FN} : tensor<32x32xf32>, tensor<1x1xf32>
  %y = weft.matmul %h, %q2 : tensor<64x32xf32>, tensor<32x32xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<64x32xf32>
  return %loss : tensor<f32>
}

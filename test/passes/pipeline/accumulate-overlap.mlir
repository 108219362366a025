// RUN: weft-opt %s -split-input-file -weft-accumulate-gradients=microbatches=4 | FileCheck %s

// ZeRO-0/1 data parallelism (no gradient is reduce-scattered): @accumulate
// adds each micro-batch's own gradient, and @accumulate_last, which the
// train schedule runs for the last micro-batch instead, all-reduces each
// accumulator right where that micro-batch's gradient is made, so the
// reduction runs under the rest of its backward (Megatron's
// overlap_grad_reduce); the state is written at the end, and the step
// reads the global sums without reducing again.

// CHECK-LABEL: func.func @accumulate(
// CHECK-NOT: weft.all_reduce sum
// CHECK: weft.assign "w.grad_acc"
// CHECK-LABEL: func.func @accumulate_last
// CHECK-DAG: %[[WACC:.*]] = weft.param "w.grad_acc"
// CHECK-DAG: %[[VACC:.*]] = weft.param "v.grad_acc"
// CHECK: %[[GW:.*]] = weft.reduce_sum %arg0 dims [0] : tensor<2x3xf32>
// CHECK-NEXT: %[[SW:.*]] = weft.add %[[WACC]], %[[GW]] : tensor<3xf32>
// CHECK-NEXT: %[[RW:.*]] = weft.all_reduce sum %[[SW]] over @mesh ["dp"] {weft.last_reduction} : tensor<3xf32>
// CHECK: %[[GV:.*]] = weft.mul %arg0, %arg0 : tensor<2x3xf32>
// CHECK-NEXT: %[[PV:.*]] = weft.reduce_sum %[[GV]] dims [0] : tensor<2x3xf32>
// CHECK-NEXT: %[[SV:.*]] = weft.add %[[VACC]], %[[PV]] : tensor<3xf32>
// CHECK-NEXT: %[[RV:.*]] = weft.all_reduce sum %[[SV]] over @mesh ["dp"] {weft.last_reduction} : tensor<3xf32>
// CHECK: weft.assign "w.grad_acc", %[[RW]]
// CHECK-NEXT: weft.assign "v.grad_acc", %[[RV]]
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: weft.all_reduce sum
// CHECK: return
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @train_step(%x: tensor<2x3xf32>) -> (tensor<f32> {weft.output = "loss"}, tensor<3xf32> {weft.grad = "w"}, tensor<3xf32> {weft.grad = "v"}) {
  %w = weft.param "w" init(zeros) : tensor<3xf32>
  %v = weft.param "v" init(zeros) : tensor<3xf32>
  %b = weft.broadcast %w dims [1] : tensor<3xf32> -> tensor<2x3xf32>
  %y = weft.mul %x, %b : tensor<2x3xf32>
  %part = weft.reduce_sum %y dims [0, 1] : tensor<2x3xf32>
  %loss = weft.all_reduce mean %part over @mesh ["dp"] : tensor<f32>
  %g = weft.reduce_sum %x dims [0] : tensor<2x3xf32>
  %gw = weft.all_reduce sum %g over @mesh ["dp"] : tensor<3xf32>
  %x2 = weft.mul %x, %x : tensor<2x3xf32>
  %h = weft.reduce_sum %x2 dims [0] : tensor<2x3xf32>
  %gv = weft.all_reduce sum %h over @mesh ["dp"] : tensor<3xf32>
  return %loss, %gw, %gv : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// A bf16 model's gradient, reduced in bf16 and widened for its f32 master:
// each micro-batch adds its own widened gradient, and the one reduction is
// of the f32 sum (Megatron's f32 main_grad), not one in bf16 per
// micro-batch.
// CHECK-LABEL: func.func @accumulate(
// CHECK-NOT: weft.all_reduce sum
// CHECK: %[[G:.*]] = weft.reduce_sum %arg0 dims [0] : tensor<2x3xbf16>
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[G]] : tensor<3xbf16> to tensor<3xf32>
// CHECK-NOT: weft.all_reduce sum
// CHECK: weft.add %{{.*}}, %[[W]] : tensor<3xf32>
// CHECK-LABEL: func.func @accumulate_last
// CHECK: %[[S:.*]] = weft.add %{{.*}}, %{{.*}} : tensor<3xf32>
// CHECK-NEXT: weft.all_reduce sum %[[S]] over @mesh ["dp"] {weft.last_reduction} : tensor<3xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @train_step(%x: tensor<2x3xbf16>) -> (tensor<f32> {weft.output = "loss"}, tensor<3xf32> {weft.grad = "w"}) {
  %w = weft.param "w" init(zeros) : tensor<3xf32>
  %w16 = weft.cast %w : tensor<3xf32> to tensor<3xbf16>
  %b = weft.broadcast %w16 dims [1] : tensor<3xbf16> -> tensor<2x3xbf16>
  %y = weft.mul %x, %b : tensor<2x3xbf16>
  %part = weft.reduce_sum %y dims [0, 1] : tensor<2x3xbf16>
  %p32 = weft.cast %part : tensor<bf16> to tensor<f32>
  %loss = weft.all_reduce mean %p32 over @mesh ["dp"] : tensor<f32>
  %g = weft.reduce_sum %x dims [0] : tensor<2x3xbf16>
  %gsum = weft.all_reduce sum %g over @mesh ["dp"] : tensor<3xbf16>
  %gw = weft.cast %gsum : tensor<3xbf16> to tensor<3xf32>
  return %loss, %gw : tensor<f32>, tensor<3xf32>
}

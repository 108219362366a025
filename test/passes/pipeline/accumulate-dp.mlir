// RUN: weft-opt %s -weft-accumulate-gradients=microbatches=4 | FileCheck %s

// Under data parallelism the gradient's sum over dp moves from each
// micro-batch to the step: @accumulate adds this rank's own gradient, and
// the step all-reduces the accumulator once before the mean (four times
// fewer bytes at M=4). A gradient whose sum has another reader, or a
// ZeRO-2 one (weft-partition-optimizer makes that the per-micro-batch
// reduce-scatter into its block accumulator), keeps its reduction.

// CHECK-LABEL: func.func @accumulate
// CHECK-DAG: %[[WACC:.*]] = weft.param "w.grad_acc"
// CHECK-DAG: %[[VACC:.*]] = weft.param "v.grad_acc"
// CHECK-DAG: %[[ZACC:.*]] = weft.param "z.grad_acc"
// CHECK: %[[ZSUM:.*]] = weft.all_reduce sum %[[GZ:.*]] over @mesh ["dp"] : tensor<3xf32>
// CHECK: %[[VSUM:.*]] = weft.all_reduce sum %{{.*}} over @mesh ["dp"] : tensor<3xf32>
// CHECK-NOT: weft.all_reduce
// CHECK: %[[TWICE:.*]] = weft.add %[[VSUM]], %[[VSUM]] : tensor<3xf32>
// CHECK-NOT: weft.all_reduce
// CHECK: weft.add %[[WACC]], %[[GW:.*]] : tensor<3xf32>
// CHECK: weft.add %[[VACC]], %[[TWICE]] : tensor<3xf32>
// CHECK: weft.add %[[ZACC]], %[[ZSUM]] : tensor<3xf32>
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = weft.param "w.grad_acc"
// CHECK: %[[WALL:.*]] = weft.all_reduce sum %[[W]] over @mesh ["dp"] : tensor<3xf32>
// CHECK: weft.mul %[[WALL]], %{{.*}} : tensor<3xf32>
// CHECK: %[[V:.*]] = weft.param "v.grad_acc"
// CHECK-NEXT: weft.constant
// CHECK-NEXT: weft.mul %[[V]], %{{.*}} : tensor<3xf32>
// CHECK: %[[Z:.*]] = weft.param "z.grad_acc"
// CHECK-NEXT: weft.constant
// CHECK-NEXT: weft.mul %[[Z]], %{{.*}} : tensor<3xf32>
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @train_step(%x: tensor<2x3xf32>) -> (tensor<f32> {weft.output = "loss"}, tensor<3xf32> {weft.grad = "w"}, tensor<3xf32> {weft.grad = "v"}, tensor<3xf32> {weft.grad = "z"}) {
  %w = weft.param "w" init(zeros) : tensor<3xf32>
  %v = weft.param "v" init(zeros) : tensor<3xf32>
  %z = weft.param "z" init(zeros) {weft.grad_shard} : tensor<3xf32>
  %b = weft.broadcast %w dims [1] : tensor<3xf32> -> tensor<2x3xf32>
  %y = weft.mul %x, %b : tensor<2x3xf32>
  %part = weft.reduce_sum %y dims [0, 1] : tensor<2x3xf32>
  %loss = weft.all_reduce mean %part over @mesh ["dp"] : tensor<f32>
  %g = weft.reduce_sum %x dims [0] : tensor<2x3xf32>
  %gw = weft.all_reduce sum %g over @mesh ["dp"] : tensor<3xf32>
  %gz = weft.all_reduce sum %g over @mesh ["dp"] : tensor<3xf32>
  %gv = weft.all_reduce sum %g over @mesh ["dp"] : tensor<3xf32>
  %twice = weft.add %gv, %gv : tensor<3xf32>
  return %loss, %gw, %twice, %gz : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

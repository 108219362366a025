// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=2},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-optimizer-adamw,weft-partition-optimizer)' | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=1},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-optimizer-adamw,weft-partition-optimizer)' | FileCheck %s --check-prefix=ZERO1

// ZeRO-2 with micro-batches: each micro-batch reduce-scatters its gradient
// of "w" (dimension 0 over dp) into a block accumulator, so no rank holds
// the whole gradient between micro-batches, and the step reads the same
// block (the runtime refuses a parameter whose type differs between
// programs). ZeRO-1 keeps whole gradients: a whole accumulator, all-reduced.

// CHECK-LABEL: func.func @accumulate
// CHECK: %[[ACC:.*]] = weft.param "w.grad_acc" init(zeros) state {weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], []]>, weft.transient} : tensor<2x6xf32>
// CHECK-NOT: weft.all_reduce sum {{.*}} tensor<4x6xf32>
// CHECK: %[[BLOCK:.*]] = weft.reduce_scatter %{{.*}} over @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK: %[[SUM:.*]] = weft.add %[[ACC]], %[[BLOCK]] : tensor<2x6xf32>
// CHECK: weft.assign "w.grad_acc", %[[SUM]] : tensor<2x6xf32>
// CHECK-LABEL: func.func @step
// CHECK: weft.param "w.grad_acc" init(zeros) state {weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], []]>, weft.transient} : tensor<2x6xf32>
// CHECK: weft.assign "w.grad_acc", %{{.*}} : tensor<2x6xf32>

// ZERO1-LABEL: func.func @accumulate
// ZERO1: weft.param "w.grad_acc" init(zeros) state {weft.transient} : tensor<4x6xf32>
// ZERO1: weft.all_reduce sum %{{.*}} over @mesh ["dp"] {{.*}}: tensor<4x6xf32>
// ZERO1-NOT: weft.reduce_scatter
// ZERO1-LABEL: func.func @step
func.func @forward(%x: tensor<4x4xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) : tensor<4x6xf32>
  %y = weft.matmul %x, %w : tensor<4x4xf32>, tensor<4x6xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<4x6xf32>
  return %loss : tensor<f32>
}

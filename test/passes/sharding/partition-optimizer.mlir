// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=1},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-optimizer-adamw,weft-partition-optimizer)' | FileCheck %s --check-prefixes=CHECK,ZERO1
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=2},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-optimizer-adamw,weft-partition-optimizer)' | FileCheck %s --check-prefixes=CHECK,ZERO2

// ZeRO-1/2 derived by partitioning the step: weft-optimizer-adamw writes the
// update of whole tensors; the plan's optimizer split on "w" (dimension 0
// over dp) makes its moments blocks, the update runs on blocks of the
// gradient and the parameter, and the new blocks are all-gathered into
// "w". ZeRO-1 all-reduces the gradient whole (its norm is summed whole);
// ZeRO-2 reduce-scatters it (its norm sums blocks, then all-reduces). "b"
// (3 elements, which dp=2 does not divide) stays whole.

// CHECK-LABEL: func.func @step
// ZERO1: weft.param "w" {{.*}}{weft.grad_elements = 24 : i64, weft.optimizer_shard
// ZERO2: weft.param "w" {{.*}}{weft.grad_elements = 12 : i64, weft.grad_shard, weft.optimizer_shard
// CHECK: weft.param "b" {{.*}}{weft.grad_elements = 3 : i64} : tensor<3xf32>
// CHECK: weft.param "w.exp_avg" init(zeros) state {weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], []]>} : tensor<2x6xf32>
// CHECK: weft.param "w.exp_avg_sq" init(zeros) state {weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], []]>} : tensor<2x6xf32>
// CHECK: weft.param "b.exp_avg" init(zeros) state : tensor<3xf32>
// CHECK-NOT: weft.copy_to_group {{.*}} tensor<2x6xf32>
// ZERO1: %[[G:.*]] = weft.all_reduce sum %{{.*}} over @mesh ["dp"] : tensor<4x6xf32>
// ZERO1: weft.square %[[G]] : tensor<4x6xf32>
// ZERO1-NOT: weft.all_reduce
// ZERO1: %[[GB:.*]] = weft.shard_slice %[[G]] over @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// ZERO1: weft.mul %[[GB]], %{{.*}} : tensor<2x6xf32>
// ZERO2-NOT: weft.all_reduce sum {{.*}} tensor<4x6xf32>
// ZERO2: %[[G:.*]] = weft.reduce_scatter %{{.*}} over @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// ZERO2: %[[SQ:.*]] = weft.square %[[G]] : tensor<2x6xf32>
// ZERO2: %[[PART:.*]] = weft.reduce_sum %[[SQ]] dims [0, 1] : tensor<2x6xf32>
// ZERO2: weft.all_reduce sum %[[PART]] over @mesh ["dp"] : tensor<f32>
// ZERO2: weft.mul %[[G]], %{{.*}} : tensor<2x6xf32>
// CHECK: %[[WB:.*]] = weft.shard_slice %0 over @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK: weft.mul %[[WB]], %{{.*}} : tensor<2x6xf32>
// CHECK: %[[NEW:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<2x6xf32> -> tensor<4x6xf32>
// CHECK: weft.assign "w", %[[NEW]] : tensor<4x6xf32>
// CHECK: weft.assign "w.exp_avg", %{{.*}} : tensor<2x6xf32>
// CHECK: weft.assign "w.exp_avg_sq", %{{.*}} : tensor<2x6xf32>
// CHECK: weft.assign "b", %{{.*}} : tensor<3xf32>
// CHECK-NOT: weft.grad_of
func.func @forward(%x: tensor<4x4xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) : tensor<4x6xf32>
  %b = weft.param "b" init(zeros) : tensor<3xf32>
  %y = weft.matmul %x, %w : tensor<4x4xf32>, tensor<4x6xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<4x6xf32>
  return %loss : tensor<f32>
}

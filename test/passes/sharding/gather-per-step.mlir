// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,zero=3},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step)' | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-apply-plan{plan=dp=2,tp=2,zero=3},func.func(weft-sharding-propagate,weft-partition),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step)' | FileCheck %s --check-prefix=TP
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3,mb=2 sched=true})' | FileCheck %s --check-prefix=SCHED

// ZeRO-3 with micro-batches, gathered once per step: @gather all-gathers
// the stored block of "w" into the state parameter "w.gathered", and
// @accumulate, run once per micro-batch, reads that in its forward and
// backward instead of gathering; the gradient still reduce-scatters there.
// Under tp the gathered value is still tp's block, and says so.

// Lowered, @gather gathers straight into the state's storage: nothing of
// the program reads it, so no arena buffer holds the whole parameter
// until an assign at the end (inPlaceParam), and the arena is empty.
// SCHED-LABEL: sched.program @gather arena(0)
// SCHED-NEXT: %[[S:.*]] = sched.get @w : <2x6xf32>
// SCHED-NEXT: %[[G:.*]] = sched.get @w.gathered : <4x6xf32>
// SCHED-NEXT: sched.collective all_gather none %[[S]] -> %[[G]] over @mesh ["dp"] : <2x6xf32> -> <4x6xf32>
// SCHED-NEXT: sched.return []

// CHECK-LABEL: func.func @gather()
// CHECK: %[[W:.*]] = weft.param "w" init(normal, {{.*}}) {weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], []]>, weft.tp_dim = 1 : i64} : tensor<2x6xf32>
// CHECK: weft.param "w.gathered" init(zeros) state {weft.transient} : tensor<4x6xf32>
// CHECK: %[[WHOLE:.*]] = weft.all_gather %[[W]] over @mesh ["dp"] dim 0 : tensor<2x6xf32> -> tensor<4x6xf32>
// CHECK: weft.assign "w.gathered", %[[WHOLE]] : tensor<4x6xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[G:.*]] = weft.param "w.gathered" init(zeros) state {weft.transient} : tensor<4x6xf32>
// CHECK-NOT: weft.all_gather
// CHECK: weft.matmul %arg0, %[[G]] : tensor<2x4xf32>, tensor<4x6xf32>
// CHECK-NOT: weft.all_gather
// CHECK: weft.reduce_scatter %{{.*}} over @mesh ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK-LABEL: func.func @train_step

// TP-LABEL: func.func @gather()
// TP: weft.param "w.gathered" init(zeros) state {weft.shard_of = #weft.sharding<@mesh, {{\[}}[], ["tp"]]>, weft.transient} : tensor<4x3xf32>
// TP: weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<2x3xf32> -> tensor<4x3xf32>
// TP-LABEL: func.func @accumulate
// TP-NOT: weft.all_gather
// TP-LABEL: func.func @train_step
func.func @forward(%x: tensor<4x4xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) {weft.tp_dim = 1 : i64} : tensor<4x6xf32>
  %y = weft.matmul %x, %w : tensor<4x4xf32>, tensor<4x6xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<4x6xf32>
  return %loss : tensor<f32>
}

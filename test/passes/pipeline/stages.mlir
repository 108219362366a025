// RUN: weft-opt %s -weft-pipeline-assign-stages=stages=2 | FileCheck %s --check-prefix=STAGES
// RUN: weft-opt %s -weft-pipeline-assign-stages=stages=2 -weft-autodiff -weft-accumulate-gradients=microbatches=2 -weft-optimizer-adamw=keep-func=false -weft-pipeline-split=schedule=gpipe | FileCheck %s

// Two layers on two stages. Each op runs on the latest stage of its
// operands: layer 0's matmul and tanh on stage 0, layer 1 and the loss on
// stage 1; the parameter without a layer read before the first layer (an
// embedding's place) goes to stage 0.
// STAGES: func.func @forward{{.*}} attributes {weft.stages = 2 : i64}
// STAGES: weft.param "w0" {{.*}}weft.stage = 0
// STAGES: weft.param "w1" {{.*}}weft.stage = 1
// STAGES: weft.param "scale" {{.*}}weft.stage = 0
// STAGES: weft.mul {{.*}}weft.stage = 0
// STAGES: weft.matmul {{.*}}weft.stage = 0
// STAGES: weft.tanh {{.*}}weft.stage = 0
// STAGES: weft.matmul {{.*}}weft.stage = 1
// STAGES: weft.reduce_sum {{.*}}weft.stage = 1

// The split: stage 0's forward sends its activation to the next rank
// (offset 1, tag 0) and stashes what its backward needs; stage 1's forward
// receives it (offset -1, tag 0). Stage 1's backward sends the
// activation's gradient back (offset -1, tag 1), which stage 0's backward
// receives first (offset 1, tag 1).
// CHECK: module attributes {weft.pipeline = {microbatches = 2 : i64, ranks = {{\[}}{{\[}}["stage0.forward", 0, 0], ["stage0.forward", 1, 0], ["stage0.backward", 0, 0], ["stage0.backward", 1, 0], ["rank0.step", 1, 0]], {{\[}}["stage1.forward", 0, 0], ["stage1.forward", 1, 0], ["stage1.backward", 0, 0], ["stage1.backward", 1, 0], ["rank1.step", 1, 0]]], schedule = "gpipe"}}
// CHECK-LABEL: func.func @stage0.forward(%{{.*}}: tensor<2x4xf32> {weft.input = "tokens"}) -> (tensor<2x4xf32> {weft.output = "stash.0"}, tensor<2x4xf32> {weft.output = "stash.1"})
// CHECK-NOT: weft.recv
// CHECK: %[[A:.*]] = weft.tanh
// CHECK-NEXT: weft.send %[[A]] to @mesh "pp" offset 1 tag 0 : tensor<2x4xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage0.backward(%{{.*}}: tensor<2x4xf32> {weft.input = "tokens"}, %{{.*}}: tensor<2x4xf32> {weft.input = "stash.0"}, %{{.*}}: tensor<2x4xf32> {weft.input = "stash.1"})
// CHECK-NEXT: %[[G:.*]] = weft.recv from @mesh "pp" offset 1 tag 1 : tensor<2x4xf32>
// CHECK-NOT: weft.send
// CHECK: weft.assign "w0.grad_acc"
// CHECK: weft.assign "scale.grad_acc"
// CHECK-LABEL: func.func @stage1.forward()
// CHECK-NEXT: %[[X:.*]] = weft.recv from @mesh "pp" offset -1 tag 0 : tensor<2x4xf32>
// CHECK-NOT: weft.send
// CHECK: return %[[X]],
// CHECK-LABEL: func.func @stage1.backward(
// CHECK-NOT: weft.recv
// CHECK: weft.assign "loss.accumulated"
// CHECK: weft.assign "w1.grad_acc"
// CHECK-NEXT: weft.send %{{.*}} to @mesh "pp" offset -1 tag 1 : tensor<2x4xf32>

// Each rank updates its own stage's parameters; the squared gradient norm
// and the loss are summed over pp, each rank adding its own stages' squares
// (w0 and scale on rank 0, w1 on rank 1) and zeros for the others'.
// CHECK-LABEL: func.func @rank0.step(
// CHECK-NOT: "w1
// CHECK: %[[SQW0:.*]] = weft.reduce_sum %{{.*}} : tensor<4x4xf32>
// CHECK-NEXT: %[[NOW1:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[P0:.*]] = weft.add %[[SQW0]], %[[NOW1]] : tensor<f32>
// CHECK: %[[SQS:.*]] = weft.reduce_sum %{{.*}} : tensor<2x4xf32>
// CHECK-NEXT: %[[P1:.*]] = weft.add %[[P0]], %[[SQS]] : tensor<f32>
// CHECK-NEXT: weft.all_reduce sum %[[P1]] over @mesh ["pp"]
// CHECK: weft.assign "w0",
// CHECK: weft.assign "scale",
// CHECK: %[[NOLOSS:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[L0:.*]] = weft.all_reduce sum %[[NOLOSS]] over @mesh ["pp"]
// CHECK-NEXT: return %[[L0]],
// CHECK-LABEL: func.func @rank1.step(
// CHECK-NOT: "w0
// CHECK: %[[SQW1:.*]] = weft.reduce_sum %{{.*}} : tensor<4x4xf32>
// CHECK-NEXT: %[[NOW0:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[Q0:.*]] = weft.add %[[NOW0]], %[[SQW1]] : tensor<f32>
// CHECK-NEXT: %[[NOS:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[Q1:.*]] = weft.add %[[Q0]], %[[NOS]] : tensor<f32>
// CHECK-NEXT: weft.all_reduce sum %[[Q1]] over @mesh ["pp"]
// CHECK: weft.assign "w1",
// CHECK: %[[L1:.*]] = weft.all_reduce sum %{{.*}} over @mesh ["pp"]
// CHECK-NEXT: return %[[L1]],
// CHECK-NOT: func.func
weft.mesh @mesh axes ["pp"] sizes [2]
func.func @forward(%x: tensor<2x4xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %s = weft.param "scale" init(ones) : tensor<2x4xf32>
  %xs = weft.mul %x, %s : tensor<2x4xf32>
  %h0 = weft.matmul %xs, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %a0 = weft.tanh %h0 : tensor<2x4xf32>
  %h1 = weft.matmul %a0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// RUN: weft-opt %s -weft-pipeline-assign-stages=stages=2 -weft-autodiff -weft-accumulate-gradients=microbatches=2 -weft-optimizer-adamw=keep-func=false -weft-pipeline-split=schedule=zb-h1 | FileCheck %s

// ZB-H1's split backward on two stages of one matmul each: stage 1's B
// computes only the input gradient stage 0 waits for (dh0 = dh1 w1^T) and
// sends it; its W computes the weight gradient (h0^T dh1) from what B
// hands it (the forward's h0, passed on) and dh1, which here is made of
// constants alone (the loss's gradient broadcast), so W makes it again
// instead of taking it, as a stage's programs do with what its parameters
// and constants alone make. Stage 0's B has no input gradient to send: it
// hands the received gradient to W. The table interleaves W entries as
// ZB-H1 does.

// CHECK: weft.pipeline = {microbatches = 2 : i64, ranks = {{\[}}{{\[}}["stage0.forward", 0, 0], ["stage0.forward", 1, 0], ["stage0.backward", 0, 0], ["stage0.wgrad", 0, 0], ["stage0.backward", 1, 0], ["stage0.wgrad", 1, 0], ["rank0.step", 1, 0]], {{\[}}["stage1.forward", 0, 0], ["stage1.backward", 0, 0], ["stage1.forward", 1, 0], ["stage1.backward", 1, 0], ["stage1.wgrad", 0, 0], ["stage1.wgrad", 1, 0], ["rank1.step", 1, 0]]], schedule = "zb-h1"}
// CHECK-LABEL: func.func @stage0.backward() -> (tensor<2x4xf32> {weft.output = "stash.0"})
// CHECK-NEXT: %[[DH0:.*]] = weft.recv from @mesh "pp" offset 1 tag 1
// CHECK-NEXT: return %[[DH0]]
// CHECK-LABEL: func.func @stage0.wgrad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32>, %[[G0:[a-z0-9]+]]: tensor<2x4xf32> {weft.input = "stash.0"})
// CHECK: %[[DW0:.*]] = weft.matmul %[[X]], %[[G0]] transpose_lhs
// CHECK: weft.assign "w0.grad_acc"
// CHECK-LABEL: func.func @stage1.forward()
// CHECK-LABEL: func.func @stage1.backward(
// CHECK-SAME: %[[H0:[a-z0-9]+]]: tensor<2x4xf32> {weft.input = "stash.0"}, %[[L:[a-z0-9]+]]: tensor<f32> {weft.input = "stash.1"}) -> (tensor<2x4xf32> {weft.output = "stash.0"}, tensor<f32> {weft.output = "stash.1"})
// CHECK: %[[DH1:.*]] = weft.broadcast
// CHECK: %[[W1:.*]] = weft.param "w1"
// CHECK: %[[IN:.*]] = weft.matmul %[[DH1]], %[[W1]] transpose_rhs
// CHECK-NEXT: weft.send %[[IN]] to @mesh "pp" offset -1 tag 1
// CHECK-NOT: weft.assign
// CHECK: return %[[H0]], %[[L]]
// CHECK-LABEL: func.func @stage1.wgrad(
// CHECK-SAME: %[[WH0:[a-z0-9]+]]: tensor<2x4xf32> {weft.input = "stash.0"}, %{{.*}}: tensor<f32> {weft.input = "stash.1"})
// CHECK: %[[WDH1:.*]] = weft.broadcast
// CHECK: weft.matmul %[[WH0]], %[[WDH1]] transpose_lhs
// CHECK-NOT: weft.send
// CHECK: weft.assign "loss.accumulated"
// CHECK: weft.assign "w1.grad_acc"
// CHECK-LABEL: func.func @rank0.step
weft.mesh @mesh axes ["pp"] sizes [2]
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %h0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=pp=2,dp=2,microbatches=2 fuse-and-plan=false})' | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=pp=2,dp=2,microbatches=2,schedule=zb-h1 fuse-and-plan=false})' | FileCheck %s --check-prefix=ZB

// ZeRO-0 data parallelism under a pipeline: each stage reduces its own
// gradient accumulators over dp in its last micro-batch's backward
// (stage<s>.backward_last, cut from @accumulate_last), so a stage that
// finishes its backward early reduces while the others still work, and
// no rank's step reduces gradients. The schedule runs the copy for
// micro-batch 1; it takes the same stashes as the backward it stands in
// for. With ZB-H1 the accumulators are added in W: the copy is W's.

// CHECK: weft.pipeline = {microbatches = 2 : i64, ranks = {{\[}}{{\[}}["stage0.forward", 0, 0], ["stage0.forward", 1, 0], ["stage0.backward", 0, 0], ["stage0.backward_last", 1, 0], ["rank0.step", 1, 0]], {{\[}}["stage1.forward", 0, 0], ["stage1.backward", 0, 0], ["stage1.forward", 1, 0], ["stage1.backward_last", 1, 0], ["rank1.step", 1, 0]]], schedule = "1f1b"}
// The stashes are activations only: a replicated weight read through its
// copy_to_group over dp is made again in the backward, not held once per
// micro-batch in flight.
// CHECK-LABEL: func.func @stage0.forward(
// CHECK-SAME: -> (tensor<4x128xf32> {weft.output = "stash.0"}, tensor<4x256xf32> {weft.output = "stash.1"}, tensor<4x256xf32> {weft.output = "stash.2"})
// CHECK-LABEL: func.func @stage0.backward(
// CHECK-SAME: %{{.*}}: tensor<4x128xf32> {weft.input = "x", {{.*}}, %{{.*}}: tensor<4xi32> {weft.input = "labels", {{.*}}, %[[S0:.*]]: tensor<4x128xf32> {weft.input = "stash.0"}
// CHECK-NOT: weft.all_reduce
// CHECK: weft.assign "l0.down.grad_acc"
// CHECK-LABEL: func.func @stage0.backward_last(
// CHECK-SAME: %{{.*}}: tensor<4x128xf32> {weft.input = "stash.0"}
// CHECK: %[[R:.*]]:3 = weft.all_reduce sum %{{.*}}, %{{.*}}, %{{.*}} over @mesh ["dp"] : tensor<256x128xf32>, tensor<128x256xf32>, tensor<128xf32>
// CHECK: weft.assign "l0.down.grad_acc", %[[R]]#0
// CHECK-LABEL: func.func @stage1.backward_last(
// CHECK: weft.all_reduce sum {{.*}} over @mesh ["dp"] : tensor<128x64xf32>,
// CHECK-LABEL: func.func @rank0.step
// CHECK-NOT: over @mesh ["dp"]
// CHECK-LABEL: func.func @rank1.step
// CHECK-NOT: over @mesh ["dp"]
// CHECK: return

// ZB: ["stage0.backward", 1, 0], ["stage0.wgrad_last", 1, 0], ["rank0.step", 1, 0]
// ZB-SAME: ["stage1.wgrad", 0, 0], ["stage1.wgrad_last", 1, 0], ["rank1.step", 1, 0]
// ZB-NOT: backward_last
// ZB-LABEL: func.func @stage0.wgrad_last(
// ZB: weft.all_reduce sum {{.*}} over @mesh ["dp"]

// Two layers of norm -> up [128, 256] -> silu -> down [256, 128] ->
// residual, then a head [128, 64] and the loss, over 8 tokens.
func.func @forward(%x: tensor<8x128xf32> {weft.input = "x"},
                   %labels: tensor<8xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<128xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<128x256xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<256x128xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<8x128xf32>, tensor<128xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<8x128xf32>, tensor<128x256xf32>
  %a0 = weft.silu %h0 : tensor<8x256xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<8x256xf32>, tensor<256x128xf32>
  %r0 = weft.add %x, %d0 : tensor<8x128xf32>
  %n1w = weft.param "l1.norm" init(ones) {weft.layer = 1 : i64} : tensor<128xf32>
  %up1 = weft.param "l1.up" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<128x256xf32>
  %dn1 = weft.param "l1.down" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<256x128xf32>
  %n1 = weft.rms_norm %r0, %n1w {epsilon = 1.0e-05 : f64} : tensor<8x128xf32>, tensor<128xf32>
  %h1 = weft.matmul %n1, %up1 : tensor<8x128xf32>, tensor<128x256xf32>
  %a1 = weft.silu %h1 : tensor<8x256xf32>
  %d1 = weft.matmul %a1, %dn1 : tensor<8x256xf32>, tensor<256x128xf32>
  %r1 = weft.add %r0, %d1 : tensor<8x128xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<128x64xf32>
  %logits = weft.matmul %r1, %head : tensor<8x128xf32>, tensor<128x64xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<8x64xf32>, tensor<8xi32>
  return %loss : tensor<f32>
}

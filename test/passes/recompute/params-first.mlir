// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=full}))' | FileCheck %s

// Every parameter declared first, the head's (no weft.layer) before the
// layers': where a parameter is read decides the epilogue, not where it is
// declared. The head and the loss stay out of the last layer, so full
// recomputation clones no head matmul and no layer counts the logits.
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<8x32xf32>
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<8xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x16xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<16x8xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<4x8xf32>, tensor<8x16xf32>
  %a0 = weft.silu %h0 : tensor<4x16xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<4x16xf32>, tensor<16x8xf32>
  %r0 = weft.add %x, %d0 : tensor<4x8xf32>
  %logits = weft.matmul %r0, %head : tensor<4x8xf32>, tensor<8x32xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<4x32xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

// One layer, keeping only its input x (128 bytes).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: weft.activation_bytes = array<i64: 128>
// CHECK: weft.cross_entropy
// CHECK-NOT: weft.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x32xf32>
// CHECK: return

// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=full}))' | FileCheck %s --check-prefix=FULL
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=selective}))' | FileCheck %s --check-prefix=SEL
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=none}))' | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=tensors:2,none}))' | FileCheck %s --check-prefix=TENSORS
// RUN: not weft-opt %s --pass-pipeline='builtin.module(weft-train{recompute=budget=2})' 2>&1 | FileCheck %s --check-prefix=BUDGET

// Two layers of norm -> matmul -> silu -> matmul -> residual, then a head
// and the loss. [4, 8] activations: 128 bytes each; the up projection's
// [4, 16] 256.
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<8xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x16xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<16x8xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<4x8xf32>, tensor<8x16xf32>
  %a0 = weft.silu %h0 : tensor<4x16xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<4x16xf32>, tensor<16x8xf32>
  %r0 = weft.add %x, %d0 : tensor<4x8xf32>
  %n1w = weft.param "l1.norm" init(ones) {weft.layer = 1 : i64} : tensor<8xf32>
  %up1 = weft.param "l1.up" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<8x16xf32>
  %dn1 = weft.param "l1.down" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<16x8xf32>
  %n1 = weft.rms_norm %r0, %n1w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h1 = weft.matmul %n1, %up1 : tensor<4x8xf32>, tensor<8x16xf32>
  %a1 = weft.silu %h1 : tensor<4x16xf32>
  %d1 = weft.matmul %a1, %dn1 : tensor<4x16xf32>, tensor<16x8xf32>
  %r1 = weft.add %r0, %d1 : tensor<4x8xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<8x32xf32>
  %logits = weft.matmul %r1, %head : tensor<4x8xf32>, tensor<8x32xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<4x32xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

// Full: each layer keeps its input (x, r0: 128 bytes) and computes its
// norm, up projection and silu again before their first backward reader;
// the layer's output (r0 for layer 0) stays as the next layer's input, and
// nothing of the head is recomputed.
// FULL-LABEL: func.func @train_step
// FULL-SAME: weft.activation_bytes = array<i64: 128, 128>
// FULL-SAME: weft.recompute = "full"
// FULL: %[[N1:.*]] = weft.rms_norm %[[R0:[0-9]+]],
// FULL: weft.cross_entropy
// FULL-NOT: weft.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
// FULL: %[[N1R:.*]] = weft.rms_norm %[[R0]],
// FULL-NEXT: %[[H1R:.*]] = weft.matmul %[[N1R]],
// FULL-NEXT: weft.silu %[[H1R]]
// FULL: weft.rms_norm %arg0,
// FULL-NEXT: weft.matmul
// FULL-NEXT: weft.silu
// FULL-NOT: weft.rms_norm %
// FULL: return

// Selective: the matmuls' outputs stay; the norm and silu are computed
// again from them and the kept input. Stored per layer: the input (128)
// and the up projection (256); the down projection is read by nothing the
// backward needs (the layer's output stays as the next one's input).
// SEL-LABEL: func.func @train_step
// SEL-SAME: weft.activation_bytes = array<i64: 384, 384>
// SEL: %[[H1:[0-9]+]] = weft.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>
// SEL: weft.cross_entropy
// SEL-NOT: weft.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>
// SEL: weft.silu %[[H1]]
// SEL: return

// None: nothing is cloned; every activation the backward reads is stored:
// x, n0, h0, a0 (128 + 128 + 256 + 256) per layer.
// NONE-LABEL: func.func @train_step
// NONE-SAME: weft.activation_bytes = array<i64: 768, 768>
// NONE-SAME: weft.recompute = "none"
// NONE-COUNT-2: weft.rms_norm %
// NONE-NOT: weft.rms_norm %

// Per tensor: a layer's candidates are what full recomputes, in program
// order: n, h, a, d (the residual r is the next layer's input). tensors:2
// recomputes layer 0's silu alone, from the kept up projection h0; the
// layer stores x, n0 and h0 (128 + 128 + 256), layer 1 everything.
// TENSORS-LABEL: func.func @train_step
// TENSORS-SAME: weft.activation_bytes = array<i64: 512, 768>
// TENSORS-SAME: weft.recompute = "tensors:2,none"
// TENSORS: %[[H0:[0-9]+]] = weft.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>
// TENSORS: weft.cross_entropy
// TENSORS-NOT: weft.rms_norm %
// TENSORS-NOT: weft.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>
// TENSORS: weft.silu %[[H0]]
// TENSORS-NOT: weft.silu %
// TENSORS: return

// BUDGET: error: weft-train: recompute=budget=2 is resolved by weftc compile

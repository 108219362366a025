// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-probes{probes=attention})' | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-probes{probes=attention},weft-autodiff,weft-eval-forward)' | FileCheck %s --check-prefix=STEP

// One layer: a projection, causal attention of its heads, a head and the
// loss. The attention probe is weft.attention_entropy of the attention's own
// query, key and lse (so the lowering computes it in that attention's
// pass), its mean over batch, heads and queries added into a transient
// state parameter folded "mean".
// CHECK-LABEL: func.func @forward
// CHECK: weft.param "probe.layer.0.attn_entropy" init(zeros) state {weft.layer = 0 : i64, weft.probe = "layer.0/attn_entropy", weft.probe_fold = "mean", weft.transient} : tensor<f32>
// CHECK: %[[O:.*]], %[[LSE:.*]] = weft.attention %[[Q:.*]], %[[Q]], %[[Q]] scale = 3.535500e-01 causal
// CHECK-NEXT: %[[H:.*]] = weft.attention_entropy %[[Q]], %[[Q]], %[[LSE]] scale = 3.535500e-01 causal : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x2x8xf32>
// CHECK-NEXT: %[[MEAN:.*]] = weft.reduce_mean %[[H]] dims [0, 1, 2]
// CHECK-NEXT: %[[ACC:.*]] = weft.add %{{.*}}, %[[MEAN]]
// CHECK-NEXT: weft.assign "probe.layer.0.attn_entropy", %[[ACC]]
// CHECK-NOT: weft.attention
// CHECK: weft.cross_entropy

// Autodiff leaves the entropy alone (no gradient: it is off the loss's
// path), and the training step keeps it.
// STEP-LABEL: func.func @train_step
// STEP: weft.attention_entropy
// STEP: weft.attention_grad
func.func @forward(%x: tensor<2x8x16xf32> {weft.input = "x"},
                   %labels: tensor<2x8xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %wq = weft.param "l0.q" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<16x16xf32>
  %p = weft.matmul %x, %wq : tensor<2x8x16xf32>, tensor<16x16xf32>
  %q = weft.reshape %p : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %o, %lse = weft.attention %q, %q, %q scale = 0.35355 causal : tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>
  %r = weft.reshape %o : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<16x32xf32>
  %logits = weft.matmul %r, %head : tensor<2x8x16xf32>, tensor<16x32xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<2x8x32xf32>, tensor<2x8xi32>
  return %loss : tensor<f32>
}

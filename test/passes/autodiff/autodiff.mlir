// RUN: weft-opt %s -split-input-file -weft-autodiff | FileCheck %s

// The gradient function returns the loss and one gradient per parameter, in
// declaration order, tagged with the parameter's name.

// The forward is kept as it was.
// CHECK-LABEL: func.func @forward
// CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x3xf32>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {weft.output = "loss"}, tensor<4x3xf32> {weft.grad = "w"}, tensor<3xf32> {weft.grad = "b"}, tensor<7xf32> {weft.grad = "unused"})
// CHECK: %[[T:.*]] = weft.tanh
// CHECK: %[[LOSS:.*]] = weft.reduce_mean %[[T]]
// CHECK: weft.constant dense<1.000000e+00> : tensor<f32>
// CHECK: weft.constant dense<0.166666672> : tensor<f32>
// CHECK: weft.broadcast %{{.*}} dims [] : tensor<f32> -> tensor<2x3xf32>
// CHECK: weft.square %[[T]]
// CHECK: %[[DZ:.*]] = weft.mul
// CHECK: %[[DB:.*]] = weft.reduce_sum %[[DZ]] dims [0] : tensor<2x3xf32>
// CHECK: %[[DW:.*]] = weft.matmul %{{.*}}, %[[DZ]] transpose_lhs : tensor<2x4xf32>, tensor<2x3xf32>
// CHECK: %[[ZERO:.*]] = weft.constant dense<0.000000e+00> : tensor<7xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]], %[[ZERO]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<7xf32>
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x3xf32>) {
  %w = weft.param "w" init(normal, 0.1) : tensor<4x3xf32>
  %b = weft.param "b" init(zeros) : tensor<3xf32>
  %u = weft.param "unused" init(ones) : tensor<7xf32>
  %y = weft.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %bb = weft.broadcast %b dims [1] : tensor<3xf32> -> tensor<2x3xf32>
  %z = weft.add %y, %bb : tensor<2x3xf32>
  %t = weft.tanh %z : tensor<2x3xf32>
  %loss = weft.reduce_mean %t dims [0, 1] : tensor<2x3xf32>
  return %loss, %t : tensor<f32>, tensor<2x3xf32>
}

// -----

// Composite ops use their fused gradient ops; gradients of a value used
// twice are summed.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {weft.output = "loss"}, tensor<16x8xf32> {weft.grad = "emb"}, tensor<8xf32> {weft.grad = "g"})
func.func @forward(%ids: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
  %t = weft.param "emb" init(normal, 0.02) : tensor<16x8xf32>
  %g = weft.param "g" init(ones) : tensor<8xf32>
  %h = weft.embedding %t, %ids : tensor<16x8xf32>, tensor<1x4xi32>
  %n = weft.rms_norm %h, %g : tensor<1x4x8xf32>, tensor<8xf32>
  %q = weft.reshape %n : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %a:2 = weft.attention %q, %q, %q scale = 0.5 causal : tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
  %o = weft.reshape %a#0 : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  %logits = weft.matmul %o, %t transpose_rhs : tensor<1x4x8xf32>, tensor<16x8xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32>
  return %loss : tensor<f32>
}
// CHECK: %[[DL:.*]] = weft.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x16xf32>, tensor<1x4xi32>
// CHECK: %[[DO:.*]] = weft.matmul %[[DL]], %{{.*}} : tensor<1x4x16xf32>, tensor<16x8xf32>
// The tied head's gradient folds the batch into one GEMM (views, no sum).
// CHECK: %[[A2:.*]] = weft.reshape %{{.*}} : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[G2:.*]] = weft.reshape %[[DL]] : tensor<1x4x16xf32> -> tensor<4x16xf32>
// CHECK: %[[DT1:.*]] = weft.matmul %[[G2]], %[[A2]] transpose_lhs : tensor<4x16xf32>, tensor<4x8xf32>
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = weft.attention_grad %[[Q:.*]], %[[Q]], %[[Q]], %result, %lse, %{{.*}} scale = 5.000000e-01 causal
// CHECK: %[[S1:.*]] = weft.add %[[DQ]], %[[DK]]
// CHECK: weft.add %[[S1]], %[[DV]]
// CHECK: %{{.*}}, %[[DG:.*]] = weft.rms_norm_grad
// CHECK: %[[DT2:.*]] = weft.embedding_grad %{{.*}}, %{{.*}} : tensor<1x4xi32>, tensor<1x4x8xf32> -> tensor<16x8xf32>
// CHECK: %[[DT:.*]] = weft.add %[[DT1]], %[[DT2]] : tensor<16x8xf32>
// CHECK: return %{{.*}}, %[[DT]], %[[DG]] : tensor<f32>, tensor<16x8xf32>, tensor<8xf32>

// -----

// Slices that split a tensor (GPT-2's fused q, k, v) each pad their
// gradient with zeros to the whole; summed, those meet as one concat of the
// three gradients, with no add and no zeros.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: weft.concat
// CHECK: weft.concat %{{.*}}, %{{.*}}, %{{.*}} dim 1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>{{$}}
// CHECK-NOT: weft.add %{{.*}} : tensor<2x12xf32>
// CHECK-NOT: weft.concat
// CHECK: return
func.func @forward(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = weft.param "w" init(normal, 0.1) : tensor<3x12xf32>
  %y = weft.matmul %x, %w : tensor<2x3xf32>, tensor<3x12xf32>
  %q = weft.slice %y [0, 0] to [2, 4] : tensor<2x12xf32>
  %k = weft.slice %y [0, 4] to [2, 8] : tensor<2x12xf32>
  %v = weft.slice %y [0, 8] to [2, 12] : tensor<2x12xf32>
  %qk = weft.mul %q, %k : tensor<2x4xf32>
  %e = weft.exp %v : tensor<2x4xf32>
  %s = weft.add %qk, %e : tensor<2x4xf32>
  %loss = weft.reduce_sum %s dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// Overlapping slices' gradients overlap: they are added.
// CHECK-LABEL: func.func @train_step
// CHECK: weft.add %{{.*}}, %{{.*}} : tensor<2x12xf32>
func.func @forward(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = weft.param "w" init(normal, 0.1) : tensor<3x12xf32>
  %y = weft.matmul %x, %w : tensor<2x3xf32>, tensor<3x12xf32>
  %a = weft.slice %y [0, 0] to [2, 8] : tensor<2x12xf32>
  %b = weft.slice %y [0, 4] to [2, 12] : tensor<2x12xf32>
  %s = weft.mul %a, %b : tensor<2x8xf32>
  %loss = weft.reduce_sum %s dims [0, 1] : tensor<2x8xf32>
  return %loss : tensor<f32>
}

// -----

// The log-sum-exp is differentiable (ring attention merges blocks by it):
// used alone, its gradient reaches attention_grad as lse_grad beside a zero
// output gradient, and the positions go along.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[ZERO:.*]] = weft.constant dense<0.000000e+00> : tensor<1x2x1x4xf32>
// CHECK: weft.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]] positions(%[[P:.*]], %[[P]]) lse_grad(%{{.*}} : tensor<1x1x2xf32>) scale = 1.000000e+00 causal
func.func @forward() -> tensor<f32> {
  %x = weft.param "x" init(normal, 1.0) : tensor<1x2x1x4xf32>
  %p = weft.constant dense<[1, 0]> : tensor<2xi32>
  %a:2 = weft.attention %x, %x, %x positions(%p, %p) scale = 1.0 causal : tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<2xi32>, tensor<2xi32>
  %loss = weft.reduce_sum %a#1 dims [0, 1, 2] : tensor<1x1x2xf32>
  return %loss : tensor<f32>
}

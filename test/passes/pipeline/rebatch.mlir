// RUN: weft-opt %s -weft-rebatch=batch=3 | FileCheck %s
// RUN: weft-opt %s -weft-rebatch=batch=2 | FileCheck %s --check-prefix=SAME
// RUN: weft-opt %s '-weft-rebatch=batch=4 func=one' | FileCheck %s --check-prefix=ONE
// RUN: weft-opt %s '-weft-rebatch=batch=1 func=experts' | FileCheck %s --check-prefix=MOE
// RUN: weft-opt %s '-weft-rebatch=batch=4 func=inner' | FileCheck %s --check-prefix=INNER
// RUN: weft-opt %s '-weft-rebatch=batch=3 func=shifted' | FileCheck %s --check-prefix=SHIFT

// A GPT-like forward at 2 sequences rewritten at 3: the arguments, the
// embedding, the position table broadcast over the batch and the splat
// epsilon paired with it (rebuilt in their places), the reshapes that
// merge the batch with the sequence ([2*8, 4] -> [3*8, 4]) and split it
// again, the attention's heads ([B, S, H, D]) and its lse ([B, H, S]).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[T:.*]]: tensor<3x8xi32>, %[[L:.*]]: tensor<3x8xi32>) -> (tensor<f32> {weft.output = "loss"})
// CHECK: %[[H:.*]] = weft.embedding %{{.*}}, %[[T]] : tensor<16x4xf32>, tensor<3x8xi32>
// CHECK: %[[P:.*]] = weft.broadcast %{{.*}} dims [1, 2] : tensor<8x4xf32> -> tensor<3x8x4xf32>
// CHECK-NEXT: %[[X:.*]] = weft.add %[[H]], %[[P]] : tensor<3x8x4xf32>
// CHECK-NEXT: %[[E:.*]] = weft.constant dense<9.99999974E-6> : tensor<3x8x4xf32>
// CHECK-NEXT: %[[Y:.*]] = weft.add %[[X]], %[[E]] : tensor<3x8x4xf32>
// CHECK-NEXT: %[[F:.*]] = weft.reshape %[[Y]] : tensor<3x8x4xf32> -> tensor<24x4xf32>
// CHECK: weft.matmul %[[F]], %{{.*}} : tensor<24x4xf32>, tensor<4x4xf32>
// CHECK: weft.reshape %{{.*}} : tensor<24x4xf32> -> tensor<3x8x2x2xf32>
// CHECK: weft.attention {{.*}} : tensor<3x8x2x2xf32>, tensor<3x8x2x2xf32>, tensor<3x8x2x2xf32>
// CHECK: weft.reduce_sum %{{.*}} dims [1] : tensor<3x2x8xf32>
// CHECK: weft.reshape %{{.*}} : tensor<3x8x2x2xf32> -> tensor<24x4xf32>
// CHECK: weft.reshape %{{.*}} : tensor<24x16xf32> -> tensor<3x8x16xf32>
// CHECK: weft.cross_entropy %{{.*}}, %[[L]] : tensor<3x8x16xf32>, tensor<3x8xi32>
// CHECK-NOT: tensor<2x
// CHECK-LABEL: func.func @one(
// SAME: func.func @forward(%{{.*}}: tensor<2x8xi32>, %{{.*}}: tensor<2x8xi32>)
// SAME: weft.constant dense<9.99999974E-6> : tensor<2x8x4xf32>
func.func @forward(%tokens: tensor<2x8xi32>, %labels: tensor<2x8xi32>) -> (tensor<f32> {weft.output = "loss"}) {
  %wte = weft.param "wte" init(ones) : tensor<16x4xf32>
  %wpe = weft.param "wpe" init(ones) : tensor<8x4xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x4xf32>, tensor<2x8xi32>
  %p = weft.broadcast %wpe dims [1, 2] : tensor<8x4xf32> -> tensor<2x8x4xf32>
  %x = weft.add %h, %p : tensor<2x8x4xf32>
  %eps = weft.constant dense<1.0e-05> : tensor<2x8x4xf32>
  %y = weft.add %x, %eps : tensor<2x8x4xf32>
  %flat = weft.reshape %y : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %wq = weft.param "wq" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %q2 = weft.matmul %flat, %wq : tensor<16x4xf32>, tensor<4x4xf32>
  %q = weft.reshape %q2 : tensor<16x4xf32> -> tensor<2x8x2x2xf32>
  %o, %lse = weft.attention %q, %q, %q scale = 0.5 causal : tensor<2x8x2x2xf32>, tensor<2x8x2x2xf32>, tensor<2x8x2x2xf32>
  %lsum = weft.reduce_sum %lse dims [1] : tensor<2x2x8xf32>
  %o2 = weft.reshape %o : tensor<2x8x2x2xf32> -> tensor<16x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x16xf32>
  %logits = weft.matmul %o2, %head : tensor<16x4xf32>, tensor<4x16xf32>
  %l3 = weft.reshape %logits : tensor<16x16xf32> -> tensor<2x8x16xf32>
  %loss = weft.cross_entropy %l3, %labels : tensor<2x8x16xf32>, tensor<2x8xi32>
  return %loss : tensor<f32>
}

// From one sequence: a reshape that drops the batch's dimension of one
// ([1, 8, 4] -> [8, 4]) keeps it as the major part of the first, and the
// reshape back puts it in the dimension that is the batch alone. A value
// computed from no input that pairs with the batch (the mask) is
// broadcast to it.
// ONE-LABEL: func.func @one(
// ONE-SAME: tensor<4x8xi32>) -> tensor<4x8x4xf32>
// ONE: weft.reshape %{{.*}} : tensor<4x8x4xf32> -> tensor<32x4xf32>
// ONE: %[[B:.*]] = weft.reshape %{{.*}} : tensor<32x4xf32> -> tensor<4x8x4xf32>
// ONE: %[[M:.*]] = weft.broadcast %{{.*}} dims [0, 1, 2] : tensor<1x8x4xf32> -> tensor<4x8x4xf32>
// ONE-NEXT: weft.mul %[[B]], %[[M]] : tensor<4x8x4xf32>
func.func @one(%tokens: tensor<1x8xi32>) -> tensor<1x8x4xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x4xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x4xf32>, tensor<1x8xi32>
  %flat = weft.reshape %h : tensor<1x8x4xf32> -> tensor<8x4xf32>
  %back = weft.reshape %flat : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %mask = weft.constant dense<[[[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]]> : tensor<1x8x4xf32>
  %y = weft.mul %back, %mask : tensor<1x8x4xf32>
  return %y : tensor<1x8x4xf32>
}

// A capacity-limited expert layer at 4 sequences of 2 (8 tokens, 2
// choices, 4 experts, capacity 5: 16 pairs in min(16, 4 x 5) rows) at
// one: capacity ceil(5 / 4) = 2, rows min(4, 4 x 2) = 4.
// MOE-LABEL: func.func @experts(
// MOE-SAME: tensor<1x2xi32>
// MOE: weft.topk_gating %{{.*}} k = 2 normalize : tensor<2x4xf32>
// MOE: weft.expert_route %{{.*}} experts = 4 capacity = 2 : tensor<2x2xi32>
// MOE: weft.expert_dispatch %{{.*}}, %{{.*}} rows = 4 : tensor<2x4xf32>, tensor<2x2xi32>
// MOE: weft.expert_combine %{{.*}} : tensor<4x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>
func.func @experts(%tokens: tensor<4x2xi32>) -> tensor<4x2x4xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x4xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x4xf32>, tensor<4x2xi32>
  %flat = weft.reshape %h : tensor<4x2x4xf32> -> tensor<8x4xf32>
  %wr = weft.param "router" init(ones) : tensor<4x4xf32>
  %r = weft.matmul %flat, %wr : tensor<8x4xf32>, tensor<4x4xf32>
  %w, %e = weft.topk_gating %r k = 2 normalize : tensor<8x4xf32>
  %pos, %counts = weft.expert_route %e experts = 4 capacity = 5 : tensor<8x2xi32>
  %d = weft.expert_dispatch %flat, %pos rows = 16 : tensor<8x4xf32>, tensor<8x2xi32>
  %c = weft.expert_combine %d, %w, %pos : tensor<16x4xf32>, tensor<8x2xf32>, tensor<8x2xi32>
  %y = weft.reshape %c : tensor<8x4xf32> -> tensor<4x2x4xf32>
  return %y : tensor<4x2x4xf32>
}

// A batch of one inside the row-major order (after a transpose, behind 8
// positions): the reshape fits it both as the major part of dimension 0
// ([8 * 1, ...], wrong: it would interleave the sequences' positions) and
// as dimension 1 alone, which wins.
// INNER-LABEL: func.func @inner(
// INNER: weft.transpose %{{.*}} [1, 0, 2] : tensor<4x8x4xf32>
// INNER-NEXT: weft.reshape %{{.*}} : tensor<8x4x4xf32> -> tensor<8x4x2x2xf32>
func.func @inner(%tokens: tensor<1x8xi32>) -> tensor<8x1x2x2xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x4xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x4xf32>, tensor<1x8xi32>
  %t = weft.transpose %h [1, 0, 2] : tensor<1x8x4xf32>
  %r = weft.reshape %t : tensor<8x1x4xf32> -> tensor<8x1x2x2xf32>
  return %r : tensor<8x1x2x2xf32>
}

// A slice that keeps the whole batch (the shifted inputs of a language
// model) grows with it.
// SHIFT-LABEL: func.func @shifted(
// SHIFT: weft.slice %{{.*}} [0, 0] to [3, 7] : tensor<3x8xi32>
// SHIFT-NEXT: return %{{.*}} : tensor<3x7xi32>
func.func @shifted(%tokens: tensor<2x8xi32>) -> tensor<2x7xi32> {
  %s = weft.slice %tokens [0, 0] to [2, 7] : tensor<2x8xi32>
  return %s : tensor<2x7xi32>
}

// RUN: weft-opt %s -split-input-file -weft-fusion-group | FileCheck %s

// A GPT MLP block: bias + gelu, and residual add, fuse around the GEMMs.
// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[M1:.*]] = weft.matmul
  %m1 = weft.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32>
  // CHECK: %[[B1:.*]] = weft.broadcast
  %bb1 = weft.broadcast %b1 dims [1] : tensor<32xf32> -> tensor<4x32xf32>
  // CHECK: %[[H:.*]] = weft.fused(%[[M1]], %[[B1]]) : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x32xf32>, %[[B:.*]]: tensor<4x32xf32>):
  // CHECK-NEXT: %[[S:.*]] = weft.add %[[A]], %[[B]]
  // CHECK-NEXT: %[[G:.*]] = weft.gelu %[[S]]
  // CHECK-NEXT: weft.yield %[[G]] : tensor<4x32xf32>
  %s1 = weft.add %m1, %bb1 : tensor<4x32xf32>
  %h = weft.gelu %s1 : tensor<4x32xf32>
  // CHECK: %[[M2:.*]] = weft.matmul %[[H]]
  %m2 = weft.matmul %h, %w2 : tensor<4x32xf32>, tensor<32x8xf32>
  %bb2 = weft.broadcast %b2 dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: weft.fused(%[[M2]], %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: weft.add
  // CHECK-NEXT: weft.add
  // CHECK-NEXT: weft.yield
  %s2 = weft.add %m2, %bb2 : tensor<4x8xf32>
  %y = weft.add %s2, %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Splat constants are copied in; an op whose other operand is computed after
// the group started does not join it (that would make a cycle), and a value
// used outside is yielded.
// CHECK-LABEL: func.func @cycle
func.func @cycle(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  // CHECK: %[[F:.*]]:2 = weft.fused(%{{.*}}) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  // CHECK: weft.constant dense<2.000000e+00> : tensor<16xf32>
  // CHECK: weft.exp
  // CHECK: weft.mul
  // CHECK: weft.yield
  // CHECK-NOT: weft.constant
  %two = weft.constant dense<2.0> : tensor<16xf32>
  %a = weft.exp %x : tensor<16xf32>
  %b = weft.mul %a, %two : tensor<16xf32>
  // CHECK: %[[R:.*]] = weft.reduce_max %[[F]]#0
  %r = weft.reduce_max %a dims [0] : tensor<16xf32>
  %rb = weft.broadcast %r dims [] : tensor<f32> -> tensor<16xf32>
  // CHECK: weft.sub %[[F]]#1, %{{.*}} : tensor<16xf32>
  %c = weft.sub %b, %rb : tensor<16xf32>
  return %c, %a : tensor<16xf32>, tensor<16xf32>
}

// -----

// Ops of different shapes and non-elementwise ops do not fuse.
// CHECK-LABEL: func.func @shapes
// CHECK-NOT: weft.fused
func.func @shapes(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  %a = weft.exp %x : tensor<4x8xf32>
  %s = weft.reduce_sum %a dims [0] : tensor<4x8xf32>
  %b = weft.add %s, %v : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// Residual + norm: the add and the norm over the last dimension run as one
// row kernel; the norm's [D] weights (declared after the add) move up and
// come in as inputs, and the residual stream is yielded too.
// CHECK-LABEL: func.func @residual_norm
func.func @residual_norm(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[G:.*]] = weft.param "g"
  // CHECK: %[[B:.*]] = weft.param "b"
  // CHECK: %[[F:.*]]:2 = weft.fused(%{{.*}}, %{{.*}}, %[[G]], %[[B]]) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: weft.add
  // CHECK-NEXT: weft.layer_norm
  // CHECK-NEXT: weft.yield
  %h = weft.add %x, %y : tensor<4x8xf32>
  %g = weft.param "g" init(ones) : tensor<8xf32>
  %b = weft.param "b" init(zeros) : tensor<8xf32>
  %n = weft.layer_norm %h, %g, %b : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: return %[[F]]#1, %[[F]]#0
  return %n, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

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
// used outside is yielded. The broadcast 0-d maximum starts a second group,
// which reads it as one value.
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
  // CHECK: weft.fused(%[[R]], %[[F]]#1) : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  // CHECK-NEXT: ^bb0(%[[S:.*]]: tensor<f32>, %[[B:.*]]: tensor<16xf32>):
  // CHECK-NEXT: %[[SB:.*]] = weft.broadcast %[[S]] dims [] : tensor<f32> -> tensor<16xf32>
  // CHECK-NEXT: weft.sub %[[B]], %[[SB]] : tensor<16xf32>
  %rb = weft.broadcast %r dims [] : tensor<f32> -> tensor<16xf32>
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

// -----

// AdamW's shape: a gradient scaled by a 0-d clip factor, two moments that
// fork from it and meet again, bias corrections and the step size as 0-d
// values. The scalars' broadcasts come in as 0-d inputs, and the two chains
// (each its own group until the add that joins them) merge: one kernel.
// CHECK-LABEL: func.func @adam_like
func.func @adam_like(%g: tensor<8x4xf32>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>, %clip: tensor<f32>, %c1: tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK: weft.fused(%arg3, %arg0, %arg1, %arg2, %arg4) : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  // CHECK-COUNT-2: weft.broadcast %{{.*}} dims [] : tensor<f32> -> tensor<8x4xf32>
  // CHECK-NOT: weft.fused
  %cb = weft.broadcast %clip dims [] : tensor<f32> -> tensor<8x4xf32>
  %g2 = weft.mul %g, %cb : tensor<8x4xf32>
  %half = weft.constant dense<0.5> : tensor<8x4xf32>
  %mm = weft.mul %m, %half : tensor<8x4xf32>
  %gm = weft.mul %g2, %half : tensor<8x4xf32>
  %m2 = weft.add %mm, %gm : tensor<8x4xf32>
  %vv = weft.mul %v, %half : tensor<8x4xf32>
  %gg = weft.square %g2 : tensor<8x4xf32>
  %v2 = weft.add %vv, %gg : tensor<8x4xf32>
  %c1b = weft.broadcast %c1 dims [] : tensor<f32> -> tensor<8x4xf32>
  %mh = weft.div %m2, %c1b : tensor<8x4xf32>
  %u = weft.div %mh, %v2 : tensor<8x4xf32>
  return %u, %m2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A chain may not merge with a group that starts earlier when one of its
// inputs is computed after that group began: the exp's group cannot take
// the second chain (its 0-d input needs the exp), so the add joins that
// chain instead and the exp stays alone.
// CHECK-LABEL: func.func @no_merge_across
func.func @no_merge_across(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK-NEXT: %[[A:.*]] = weft.exp %arg0
  %a = weft.exp %x : tensor<16xf32>
  // CHECK-NEXT: %[[R:.*]] = weft.reduce_sum %[[A]]
  %r = weft.reduce_sum %a dims [0] : tensor<16xf32>
  // CHECK-NEXT: weft.fused(%[[R]], %arg1, %[[A]])
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: weft.broadcast
  // CHECK-NEXT: weft.mul
  // CHECK-NEXT: weft.add
  %rb = weft.broadcast %r dims [] : tensor<f32> -> tensor<16xf32>
  %b = weft.mul %y, %rb : tensor<16xf32>
  %c = weft.add %a, %b : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A bf16 gradient widened to f32 and read by two groups (the gradient
// norm's squares, an update) and by a reduction: each group gets its own
// copy of the cast and reads the bf16 value as stored; the reduction keeps
// the original.
// CHECK-LABEL: func.func @widening_casts
func.func @widening_casts(%g: tensor<8xbf16>, %m: tensor<8xf32>, %s: tensor<f32>) -> (tensor<f32>, tensor<8xf32>, tensor<f32>) {
  // CHECK: %[[W:.*]] = weft.cast %arg0 : tensor<8xbf16> to tensor<8xf32>
  // CHECK: weft.fused(%arg0) : (tensor<8xbf16>) -> tensor<8xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8xbf16>):
  // CHECK-NEXT: %[[C:.*]] = weft.cast %[[A]] : tensor<8xbf16> to tensor<8xf32>
  // CHECK-NEXT: weft.square %[[C]]
  %w = weft.cast %g : tensor<8xbf16> to tensor<8xf32>
  %sq = weft.square %w : tensor<8xf32>
  %n = weft.reduce_sum %sq dims [0] : tensor<8xf32>
  // CHECK: weft.fused(%arg2, %arg0, %arg1)
  // CHECK: weft.broadcast
  // CHECK-NEXT: weft.cast %{{.*}} : tensor<8xbf16> to tensor<8xf32>
  %sb = weft.broadcast %s dims [] : tensor<f32> -> tensor<8xf32>
  %u = weft.mul %w, %sb : tensor<8xf32>
  %v = weft.add %u, %m : tensor<8xf32>
  // CHECK: weft.reduce_sum %[[W]]
  %r = weft.reduce_sum %w dims [0] : tensor<8xf32>
  return %n, %v, %r : tensor<f32>, tensor<8xf32>, tensor<f32>
}

// -----

// Data parallelism reads the norm's replicated weight through its
// copy_to_group, declared after the residual add: like the parameter
// itself it depends on nothing computed, so it moves up (with its
// parameter) and the add and the norm still fuse.
weft.mesh @mesh axes ["dp"] sizes [2]
// CHECK-LABEL: func.func @replicated_norm
func.func @replicated_norm(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[W:.*]] = weft.param "norm"
  // CHECK-NEXT: %[[C:.*]] = weft.copy_to_group %[[W]]
  // CHECK-NEXT: %{{.*}}:2 = weft.fused(%{{.*}}, %{{.*}}, %[[C]])
  // CHECK: weft.add
  // CHECK-NEXT: weft.rms_norm
  // CHECK-NEXT: weft.yield
  %s = weft.add %x, %y : tensor<4x8xf32>
  %w = weft.param "norm" init(ones) : tensor<8xf32>
  %c = weft.copy_to_group %w over @mesh ["dp"] : tensor<8xf32>
  %n = weft.rms_norm %s, %c {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  return %s, %n : tensor<4x8xf32>, tensor<4x8xf32>
}

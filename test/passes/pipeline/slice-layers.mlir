// RUN: weft-opt %s -weft-slice-layers=layers=2 | FileCheck %s
// RUN: weft-opt %s -weft-slice-layers=layers=1 | FileCheck %s --check-prefix=ONE
// RUN: weft-opt %s -weft-slice-layers=layers=3 | FileCheck %s --check-prefix=ALL
// RUN: weft-opt %s '-weft-slice-layers=layers=1 func=aux' | FileCheck %s --check-prefix=AUX
// RUN: weft-opt %s -weft-slice-layers=keep=0,2 | FileCheck %s --check-prefix=GAP
// RUN: weft-opt %s '-weft-slice-layers=layers=1 func=direct' | FileCheck %s --check-prefix=DIRECT
// RUN: weft-opt %s '-weft-slice-layers=layers=1 func=cast' | FileCheck %s --check-prefix=CAST

// An embedding's place (%e, from the input), three residual layers, each
// declaring its weight where it reads it, then a final weight without a
// layer (the head's place). Each layer's output is the residual add: the
// one value of the stream live after the layer's last read of its
// parameters (%e counts: layer 0's output is not its branch %b0; the
// rotary-like %pos, from a constant, does not). Cut to two layers, the
// head reads layer 1's output, and layer 2's weight and ops are gone.
// CHECK-LABEL: func.func @forward
// CHECK: weft.param "w0"
// CHECK: weft.param "w1"
// CHECK: %[[H1:.*]] = weft.add %{{.*}}, %{{.*}} : tensor<2x4xf32>
// CHECK-NOT: "w2"
// CHECK: %[[HEAD:.*]] = weft.param "head"
// CHECK-NEXT: %[[Y:.*]] = weft.matmul %[[H1]], %[[HEAD]]
// CHECK-NEXT: %[[L:.*]] = weft.reduce_sum %[[Y]]
// CHECK-NEXT: return %[[L]]

// ONE: %[[E:.*]] = weft.tanh
// ONE: weft.param "w0"
// ONE: %[[H0:.*]] = weft.add %[[E]], %{{.*}} : tensor<2x4xf32>
// ONE-NOT: "w1"
// ONE-NOT: "w2"
// ONE: %[[HEAD0:.*]] = weft.param "head"
// ONE-NEXT: weft.matmul %[[H0]], %[[HEAD0]]

// Layers 0 and 2 kept (how the planner times a layer of another kind):
// layer 2 reads layer 0's output where it read layer 1's.
// GAP: %[[E2:.*]] = weft.tanh
// GAP: %[[G0:.*]] = weft.add %[[E2]], %{{.*}} : tensor<2x4xf32>
// GAP-NOT: "w1"
// GAP: %[[W2:.*]] = weft.param "w2"
// GAP-NEXT: weft.matmul %[[G0]], %[[W2]]
// GAP: weft.param "head"

// All three kept: nothing changes.
// ALL: weft.param "w2"
// ALL: weft.param "head"
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %pos = weft.constant dense<1.0> : tensor<2x4xf32>
  %e = weft.tanh %x : tensor<2x4xf32>
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %e, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %b0 = weft.mul %a0, %pos : tensor<2x4xf32>
  %h0 = weft.add %e, %b0 : tensor<2x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %a1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %b1 = weft.mul %a1, %pos : tensor<2x4xf32>
  %h1 = weft.add %h0, %b1 : tensor<2x4xf32>
  %w2 = weft.param "w2" init(ones) {weft.layer = 2 : i64} : tensor<4x4xf32>
  %a2 = weft.matmul %h1, %w2 : tensor<2x4xf32>, tensor<4x4xf32>
  %b2 = weft.mul %a2, %pos : tensor<2x4xf32>
  %h2 = weft.add %h1, %b2 : tensor<2x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x4xf32>
  %y = weft.matmul %h2, %head : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %y dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// A layer may also leave values only what follows the layers reads (a
// mixture of experts' auxiliary losses, summed into the loss; made before
// the layer's output, as the frontends make them): its side outputs. The stream is the one value that reaches a later layer's
// parameters (or the head's); cut to one layer, each dropped layer's side
// output is read as the kept last layer's, and the dropped layers go.
// AUX-LABEL: func.func @aux
// AUX: %[[S0:.*]] = weft.reduce_sum %{{.*}} dims [0, 1]
// AUX: %[[H0:.*]] = weft.add %{{.*}}, %{{.*}} : tensor<2x4xf32>
// AUX-NOT: "v1"
// AUX: weft.param "head"
// AUX-NEXT: weft.matmul %[[H0]],
// AUX: %[[L:.*]] = weft.reduce_sum
// AUX-NEXT: %[[T:.*]] = weft.add %[[S0]], %[[S0]] : tensor<f32>
// AUX-NEXT: weft.add %[[L]], %[[T]] : tensor<f32>
func.func @aux(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %e = weft.tanh %x : tensor<2x4xf32>
  %v0 = weft.param "v0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %e, %v0 : tensor<2x4xf32>, tensor<4x4xf32>
  %s0 = weft.reduce_sum %a0 dims [0, 1] : tensor<2x4xf32>
  %h0 = weft.add %e, %a0 : tensor<2x4xf32>
  %v1 = weft.param "v1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %a1 = weft.matmul %h0, %v1 : tensor<2x4xf32>, tensor<4x4xf32>
  %s1 = weft.reduce_sum %a1 dims [0, 1] : tensor<2x4xf32>
  %h1 = weft.add %h0, %a1 : tensor<2x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x4xf32>
  %y = weft.matmul %h1, %head : tensor<2x4xf32>, tensor<4x4xf32>
  %l = weft.reduce_sum %y dims [0, 1] : tensor<2x4xf32>
  %t = weft.add %s0, %s1 : tensor<f32>
  %loss = weft.add %l, %t : tensor<f32>
  return %loss : tensor<f32>
}

// The stream may be the function's argument itself: layer 0's output is
// the residual add, not the branch before it (the argument is live too).
// DIRECT-LABEL: func.func @direct
// DIRECT: %[[H0:.*]] = weft.add %{{.*}}, %{{.*}} : tensor<2x4xf32>
// DIRECT-NOT: "u1"
// DIRECT: weft.param "head"
// DIRECT-NEXT: weft.matmul %[[H0]],
func.func @direct(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %u0 = weft.param "u0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %x, %u0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h0 = weft.add %x, %a0 : tensor<2x4xf32>
  %u1 = weft.param "u1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %a1 = weft.matmul %h0, %u1 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.add %h0, %a1 : tensor<2x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x4xf32>
  %y = weft.matmul %h1, %head : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %y dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// Weights read through their compute-type casts, all made up front (f32
// master weights, bf16 GEMMs): the casts are weights, not activations, and
// the dropped layer's cast goes with its parameter.
// CAST-LABEL: func.func @cast
// CAST-NOT: "c1"
// CAST: %[[H0:.*]] = weft.add %{{.*}}, %{{.*}} : tensor<2x4xbf16>
// CAST: weft.matmul %[[H0]],
// CAST-NOT: weft.matmul
func.func @cast(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %c0 = weft.param "c0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %c1 = weft.param "c1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x4xf32>
  %b0 = weft.cast %c0 : tensor<4x4xf32> to tensor<4x4xbf16>
  %b1 = weft.cast %c1 : tensor<4x4xf32> to tensor<4x4xbf16>
  %bh = weft.cast %head : tensor<4x4xf32> to tensor<4x4xbf16>
  %e = weft.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
  %a0 = weft.matmul %e, %b0 : tensor<2x4xbf16>, tensor<4x4xbf16>
  %h0 = weft.add %e, %a0 : tensor<2x4xbf16>
  %a1 = weft.matmul %h0, %b1 : tensor<2x4xbf16>, tensor<4x4xbf16>
  %h1 = weft.add %h0, %a1 : tensor<2x4xbf16>
  %y = weft.matmul %h1, %bh : tensor<2x4xbf16>, tensor<4x4xbf16>
  %yf = weft.cast %y : tensor<2x4xbf16> to tensor<2x4xf32>
  %loss = weft.reduce_sum %yf dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

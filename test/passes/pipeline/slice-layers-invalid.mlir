// RUN: weft-opt %s -split-input-file -weft-slice-layers=layers=1 -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-slice-layers=layers=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not weft-opt %s -split-input-file -weft-slice-layers=layers=5 2>&1 | FileCheck %s --check-prefix=MORE
// RUN: not weft-opt %s -split-input-file -weft-slice-layers=func=missing 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not weft-opt %s -split-input-file -weft-slice-layers=keep=1 2>&1 | FileCheck %s --check-prefix=FROM0
// RUN: not weft-opt %s -split-input-file -weft-slice-layers=keep=0,0 2>&1 | FileCheck %s --check-prefix=RISE
// FROM0: weft-slice-layers: the layers kept must rise from 0 and stay below 2; got layer 1 in place 0
// RISE: weft-slice-layers: the layers kept must rise from 0 and stay below 2; got layer 0 in place 1
// ZERO: weft-slice-layers: cannot keep 0 layers of @forward's 2 (from 1 to all of them)
// MORE: weft-slice-layers: cannot keep 5 layers of @forward's 2 (from 1 to all of them)
// FUNC: weft-slice-layers: no function named @missing

// The usual residual model: cut without complaint (the other runs' errors
// are about the layer count).
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h0 = weft.add %x, %a0 : tensor<2x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %a1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.add %h0, %a1 : tensor<2x4xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @below {{weft-slice-layers: no parameter of @forward carries weft.layer; a model is cut between layers}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) : tensor<4x4xf32>
  %h0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h0 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// Layer 0's output and a value inside it both reach layer 1 (a skip
// connection across layers): there is no single stream to cut at.
// expected-error @below {{weft-slice-layers: layer 0 has no single output: after the last op reading its weights, no point has exactly one live value of the layer's that later layers (or the head) read (a second stream, or a value passed across layers, cannot be cut)}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %e = weft.tanh %x : tensor<2x4xf32>
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %e, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h0 = weft.add %e, %a0 : tensor<2x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %a1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.add %a0, %a1 : tensor<2x4xf32>
  %head = weft.param "head" init(ones) : tensor<4x4xf32>
  %y = weft.matmul %h1, %head : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %y dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// The layers widen the stream: what follows layer 1 cannot read layer 0's.
// expected-error @below {{weft-slice-layers: layer 0's output is tensor<2x4xf32> but layer 1's is tensor<2x8xf32>; what reads the one cannot read the other}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %a0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h0 = weft.add %x, %a0 : tensor<2x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x8xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x8xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x8xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @below {{weft-slice-layers: @forward has no body to cut}}
func.func private @forward(%x: tensor<2x4xf32>) -> tensor<f32>

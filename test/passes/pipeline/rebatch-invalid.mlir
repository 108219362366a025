// RUN: weft-opt %s -split-input-file -verify-diagnostics -weft-rebatch=batch=3

// expected-error @+1 {{weft-rebatch: argument #1 is 'tensor<8xi32>', whose first dimension is not the batch of 2 sequences the tokens give}}
func.func @forward(%tokens: tensor<2x8xi32>, %labels: tensor<8xi32>) -> tensor<2x8xi32> {
  return %tokens : tensor<2x8xi32>
}

// -----

// expected-error @+1 {{weft-rebatch: @forward must take [batch, seq] integer token ids first, the batch at least 1}}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}

// -----

// The batch cannot be split over two dimensions ([4, 8] -> [2, 2, 8]).
func.func @forward(%tokens: tensor<4x8xi32>) -> tensor<2x2x8x2xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x2xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x2xf32>, tensor<4x8xi32>
  // expected-error @+1 {{weft-rebatch: the reshape from 'tensor<4x8x2xf32>' to 'tensor<2x2x8x2xf32>' splits the batch over dimensions}}
  %s = weft.reshape %h : tensor<4x8x2xf32> -> tensor<2x2x8x2xf32>
  return %s : tensor<2x2x8x2xf32>
}

// -----

// A value paired with the batch that no input feeds and that is neither a
// broadcast nor a splat constant: its rows are the sequences' own.
func.func @forward(%tokens: tensor<2x2xi32>) -> tensor<2x2x1xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x1xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x1xf32>, tensor<2x2xi32>
  %m = weft.constant dense<[[[1.0], [0.0]], [[0.0], [1.0]]]> : tensor<2x2x1xf32>
  // expected-error @+1 {{weft-rebatch: an operand of type 'tensor<2x2x1xf32>' pairs with the batch but is computed from no input (only a broadcast or a splat constant is rebuilt at another batch)}}
  %y = weft.mul %h, %m : tensor<2x2x1xf32>
  return %y : tensor<2x2x1xf32>
}

// -----

// A broadcast that copies its input into the batch's dimension.
func.func @forward(%tokens: tensor<2x2xi32>) -> tensor<2x2x1xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x1xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x1xf32>, tensor<2x2xi32>
  %w = weft.param "w" init(ones) : tensor<2x2xf32>
  %b = weft.broadcast %w dims [0, 1] : tensor<2x2xf32> -> tensor<2x2x1xf32>
  // expected-error @+1 {{weft-rebatch: the broadcast it pairs with the batch copies its input's dimension 0 into the batch's}}
  %y = weft.mul %h, %b : tensor<2x2x1xf32>
  return %y : tensor<2x2x1xf32>
}

// -----

// From one sequence, a broadcast that repeats the batch's dimension of one.
func.func @forward(%tokens: tensor<1x2xi32>) -> tensor<3x2x1xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x1xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x1xf32>, tensor<1x2xi32>
  // expected-error @+1 {{weft-rebatch: the broadcast repeats the batch's dimension}}
  %b = weft.broadcast %h dims [0, 1, 2] : tensor<1x2x1xf32> -> tensor<3x2x1xf32>
  return %b : tensor<3x2x1xf32>
}

// -----

// An op placed by weft-partition.
func.func @forward(%tokens: tensor<2x2xi32>) -> tensor<2x2x1xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x1xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x1xf32>, tensor<2x2xi32>
  // expected-error @+1 {{weft-rebatch: 'weft.tanh' is placed (split or microbatches): rebatch the model before placing it}}
  %y = weft.tanh %h {microbatches = 2 : i64} : tensor<2x2x1xf32>
  return %y : tensor<2x2x1xf32>
}

// -----

// Dropless routing packs every pair: rows that are not the pairs.
func.func @forward(%tokens: tensor<2x2xi32>) -> tensor<4x1xf32> {
  %wte = weft.param "wte" init(ones) : tensor<16x1xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x1xf32>, tensor<2x2xi32>
  %flat = weft.reshape %h : tensor<2x2x1xf32> -> tensor<4x1xf32>
  %t = weft.reshape %tokens : tensor<2x2xi32> -> tensor<4x1xi32>
  %ids = weft.concat %t, %t dim 1 : tensor<4x1xi32>, tensor<4x1xi32>
  %pos, %counts = weft.expert_route %ids experts = 2 : tensor<4x2xi32>
  // expected-error @+1 {{weft-rebatch: its 9 rows are not its 8 routing pairs (dropless routing packs each)}}
  %d = weft.expert_dispatch %flat, %pos rows = 9 : tensor<4x1xf32>, tensor<4x2xi32>
  return %flat : tensor<4x1xf32>
}

// -----

// A slice that keeps part of the batch.
func.func @forward(%tokens: tensor<2x8xi32>) -> tensor<1x8xi32> {
  // expected-error @+1 {{weft-rebatch: the slice cuts the batch's dimension 0 (it keeps [0, 1) of 2)}}
  %s = weft.slice %tokens [0, 0] to [1, 8] : tensor<2x8xi32>
  return %s : tensor<1x8xi32>
}

// -----

// Joining along the batch would interleave sequences.
func.func @forward(%tokens: tensor<2x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{weft-rebatch: it joins values along the batch's dimension 0}}
  %j = weft.concat %tokens, %tokens dim 0 : tensor<2x8xi32>, tensor<2x8xi32>
  return %j : tensor<4x8xi32>
}

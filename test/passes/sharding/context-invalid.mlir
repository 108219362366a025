// RUN: weft-opt %s -split-input-file -verify-diagnostics -weft-apply-plan=plan=cp=2

// Context parallelism reorders the sequence: whatever would read it in the
// natural order is refused, naming the op.

// A position table's first S rows read by index (a GPT-2 graph from before
// positions were data): it would pair natural positions with reordered
// tokens.
func.func @forward(%tokens: tensor<2x8xi32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %wpe = weft.param "wpe" init(normal, 0.02) : tensor<32x4xf32>
  // expected-error @+1 {{'weft.slice' op takes 8 rows (the sequence's length) of a longer dimension: read a position table with weft.embedding at the weft.positions; cp=2 reorders the sequence, which it would read in the natural order}}
  %p = weft.slice %wpe [0, 0] to [8, 4] : tensor<32x4xf32>
  %l = weft.reduce_sum %p dims [0, 1] : tensor<8x4xf32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%tokens: tensor<2x8xi32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %a = weft.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32> {weft.positions}
  // expected-error @+1 {{'weft.constant' op marks the sequence's positions a second time}}
  %b = weft.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32> {weft.positions}
  %l = weft.constant dense<0.0> : tensor<f32>
  return %l : tensor<f32>
}

// -----

// Positions of the model's own are not the ones the plan reorders.
func.func @forward(%tokens: tensor<2x8xi32> {weft.input = "tokens"}, %x: tensor<2x8x2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %mine = weft.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  // expected-error @+1 {{'weft.rope' op has positions other than the marked weft.positions, which cp=2 would leave in the natural order}}
  %r = weft.rope %x positions %mine : tensor<2x8x2x4xf32>, tensor<8xi32>
  %l = weft.reduce_sum %r dims [0, 1, 2, 3] : tensor<2x8x2x4xf32>
  return %l : tensor<f32>
}

// -----

// A capacity drops pairs in token order, which cp changes.
func.func @forward(%tokens: tensor<2x8xi32> {weft.input = "tokens"}, %e: tensor<16x2xi32>) -> (tensor<f32> {weft.output = "loss"}) {
  // expected-error @+1 {{'weft.expert_route' op drops pairs past a capacity in token order; cp=2 reorders the sequence, which it would read in the natural order}}
  %pos, %counts = weft.expert_route %e experts = 4 capacity = 6 : tensor<16x2xi32>
  %l = weft.constant dense<0.0> : tensor<f32>
  return %l : tensor<f32>
}

// -----

// A sequence of 6 does not split into 4 chunks.
// expected-error @+1 {{sequence length 6 of input 0 does not split into 2 x cp = 4 equal chunks (cp=2 gives rank i chunks i and 3 - i)}}
func.func @forward(%tokens: tensor<2x6xi32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %l = weft.constant dense<0.0> : tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{cp=2 splits the sequence of the token inputs [batch, seq], but the model has none}}
func.func @forward(%x: tensor<8xf32> {weft.input = "x"}) -> (tensor<f32> {weft.output = "loss"}) {
  %l = weft.constant dense<0.0> : tensor<f32>
  return %l : tensor<f32>
}

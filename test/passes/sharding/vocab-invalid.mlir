// RUN: weft-opt %s -split-input-file -verify-diagnostics

weft.mesh @mesh axes ["tp"] sizes [2]
func.func @not_vocab_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{weft.vocab_axes is only for embedding and cross-entropy ops}}
  %y = weft.neg %x {weft.vocab_axes = ["tp"]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @mesh axes ["tp"] sizes [2]
func.func @unknown_axis(%l: tensor<2x8xf32>, %y: tensor<2xi32>) -> tensor<f32> {
  // expected-error @+1 {{weft.vocab_axes names "dp", which is not an axis of @mesh}}
  %0 = weft.cross_entropy %l, %y {weft.vocab_axes = ["dp"]} : tensor<2x8xf32>, tensor<2xi32>
  return %0 : tensor<f32>
}

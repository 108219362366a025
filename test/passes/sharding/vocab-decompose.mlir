// RUN: weft-opt %s -weft-decompose -verify-diagnostics

// A vocabulary-parallel cross-entropy's primitives would see one block of
// the vocabulary: decomposing it is an error, not a silent change.
weft.mesh @mesh axes ["tp"] sizes [2]
func.func @f(%l: tensor<2x8xf32>, %y: tensor<2xi32>) -> tensor<f32> {
  // expected-error @+1 {{is vocabulary-parallel and cannot be decomposed}}
  %0 = weft.cross_entropy %l, %y {weft.vocab_axes = ["tp"]} : tensor<2x8xf32>, tensor<2xi32>
  return %0 : tensor<f32>
}

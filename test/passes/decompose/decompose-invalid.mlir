// RUN: weft-opt %s -weft-decompose -verify-diagnostics

func.func @ignore_index_is_a_class(%l: tensor<2x16xf32>, %y: tensor<2xi32>) -> tensor<f32> {
  // expected-error @+1 {{cannot decompose: ignore_index 0 is a valid class of a vocabulary of 16}}
  %0 = weft.cross_entropy %l, %y {ignore_index = 0 : i64} : tensor<2x16xf32>, tensor<2xi32>
  return %0 : tensor<f32>
}

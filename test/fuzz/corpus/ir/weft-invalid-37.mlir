func.func @layer_norm_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  %0 = weft.layer_norm %x, %g, %g {epsilon = -1.0 : f64} : tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

func.func @rms_norm_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  %0 = weft.rms_norm %x, %g {epsilon = -1.0e-6 : f64} : tensor<2x64xf32>, tensor<64xf32>
  return
}

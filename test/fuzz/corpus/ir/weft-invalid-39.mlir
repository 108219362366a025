func.func @rms_norm_weight(%x: tensor<2x64xf32>, %g: tensor<2x64xf32>) {
  %0 = weft.rms_norm %x, %g : tensor<2x64xf32>, tensor<2x64xf32>
  return
}

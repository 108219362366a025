func.func @layer_norm_bias_type(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %b: tensor<64xbf16>) {
  %0 = weft.layer_norm %x, %g, %b : tensor<2x64xf32>, tensor<64xf32>, tensor<64xbf16>
  return
}

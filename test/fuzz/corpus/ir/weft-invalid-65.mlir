func.func @rms_norm_grad_grad_type(%x: tensor<2x64xf32>, %w: tensor<64xf32>, %g: tensor<2x64xbf16>) {
  %0:2 = "weft.rms_norm_grad"(%x, %w, %g) : (tensor<2x64xf32>, tensor<64xf32>, tensor<2x64xbf16>) -> (tensor<2x64xf32>, tensor<64xf32>)
  return
}

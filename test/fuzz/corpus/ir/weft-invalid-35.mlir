func.func @layer_norm_weight(%x: tensor<2x64xf32>, %g: tensor<32xf32>) {
  %0 = weft.layer_norm %x, %g, %g : tensor<2x64xf32>, tensor<32xf32>, tensor<32xf32>
  return
}

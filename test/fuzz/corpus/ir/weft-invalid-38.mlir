func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<1xf32>) {
  %0 = weft.layer_norm %x, %g, %g : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return
}

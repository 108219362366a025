func.func @layer_norm_grad_weight(%x: tensor<2x64xf32>, %w: tensor<32xf32>) {
  %0:3 = weft.layer_norm_grad %x, %w, %x : tensor<2x64xf32>, tensor<32xf32>
  return
}

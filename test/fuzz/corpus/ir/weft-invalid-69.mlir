func.func @expert_gather_shape(%eo: tensor<8x64xf32>, %e: tensor<16x2xi32>) {
  %0 = weft.expert_gather %eo, %e : tensor<8x64xf32>, tensor<16x2xi32>
  return
}

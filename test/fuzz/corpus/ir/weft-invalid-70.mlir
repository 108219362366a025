func.func @expert_scatter_shape(%p: tensor<16x3x64xf32>, %e: tensor<16x2xi32>) {
  %0 = weft.expert_scatter %p, %e experts = 8 capacity = 4 : tensor<16x3x64xf32>, tensor<16x2xi32>
  return
}

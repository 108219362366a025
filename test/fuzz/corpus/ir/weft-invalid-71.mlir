func.func @expert_scatter_capacity(%p: tensor<16x2x64xf32>, %e: tensor<16x2xi32>) {
  %0 = weft.expert_scatter %p, %e experts = 0 capacity = 4 : tensor<16x2x64xf32>, tensor<16x2xi32>
  return
}

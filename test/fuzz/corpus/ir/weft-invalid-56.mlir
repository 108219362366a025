func.func @dispatch_shapes(%x: tensor<16x64xf32>, %e: tensor<15x2xi32>) {
  %0 = weft.expert_dispatch %x, %e experts = 8 capacity = 4 : tensor<16x64xf32>, tensor<15x2xi32>
  return
}

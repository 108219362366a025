func.func @dispatch_capacity(%x: tensor<16x64xf32>, %e: tensor<16x2xi32>) {
  %0 = weft.expert_dispatch %x, %e experts = 8 capacity = 0 : tensor<16x64xf32>, tensor<16x2xi32>
  return
}

func.func @combine_shapes(%y: tensor<8x4x64xf32>, %w: tensor<16x2xf32>, %e: tensor<16x3xi32>) {
  %0 = weft.expert_combine %y, %w, %e : tensor<8x4x64xf32>, tensor<16x2xf32>, tensor<16x3xi32>
  return
}

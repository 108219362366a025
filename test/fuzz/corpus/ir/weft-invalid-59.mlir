func.func @combine_types(%y: tensor<8x4x64xf32>, %w: tensor<16x2xbf16>, %e: tensor<16x2xi32>) {
  %0 = weft.expert_combine %y, %w, %e : tensor<8x4x64xf32>, tensor<16x2xbf16>, tensor<16x2xi32>
  return
}

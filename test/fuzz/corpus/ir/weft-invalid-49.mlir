func.func @attention_head_dim(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x8xf32>) {
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>
  return
}

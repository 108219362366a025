func.func @attention_gqa(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>) {
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>, tensor<2x8x3x16xf32>
  return
}

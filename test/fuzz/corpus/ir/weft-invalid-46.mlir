func.func @attention_types(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xbf16>) {
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>
  return
}

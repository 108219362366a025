func.func @attention_kv(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x9x4x16xf32>) {
  %0:2 = weft.attention %q, %k, %v scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x9x4x16xf32>
  return
}

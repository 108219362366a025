func.func @attention_rank(%q: tensor<2x8x64xf32>) {
  %0:2 = weft.attention %q, %q, %q scale = 1.0 : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  return
}

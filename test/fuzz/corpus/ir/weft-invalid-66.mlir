func.func @attention_grad_lse(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %o: tensor<2x8x4x16xf32>, %lse: tensor<2x8x4xf32>) {
  %0:3 = weft.attention_grad %q, %kv, %kv, %o, %lse, %o scale = 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  return
}

func.func @topk_k(%x: tensor<16x8xf32>) {
  %0:2 = weft.topk %x k = 9 : tensor<16x8xf32>
  return
}

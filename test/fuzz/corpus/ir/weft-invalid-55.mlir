func.func @topk_gating_rank(%x: tensor<2x16x8xf32>) {
  %0:2 = weft.topk_gating %x k = 2 : tensor<2x16x8xf32>
  return
}

func.func @embedding_float_ids(%t: tensor<256x8xf32>, %ids: tensor<2x8xf32>) {
  %0 = weft.embedding %t, %ids : tensor<256x8xf32>, tensor<2x8xf32>
  return
}

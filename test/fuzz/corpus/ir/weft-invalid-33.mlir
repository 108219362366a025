func.func @embedding_table(%t: tensor<256xf32>, %ids: tensor<2x8xi32>) {
  %0 = weft.embedding %t, %ids : tensor<256xf32>, tensor<2x8xi32>
  return
}

func.func @embedding_grad_shape(%ids: tensor<2x8xi32>, %g: tensor<2x8x32xf32>) {
  %0 = weft.embedding_grad %ids, %g : tensor<2x8xi32>, tensor<2x8x32xf32> -> tensor<256x64xf32>
  return
}

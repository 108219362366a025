func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  %0 = weft.transpose %x [0, 0] : tensor<2x3xf32>
  return
}

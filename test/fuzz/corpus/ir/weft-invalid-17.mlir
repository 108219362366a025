func.func @transpose_length(%x: tensor<2x3xf32>) {
  %0 = weft.transpose %x [0] : tensor<2x3xf32>
  return
}

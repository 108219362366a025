func.func @unknown_op(%x: tensor<4xf32>) {
  %0 = weft.frobnicate %x : tensor<4xf32>
  return
}

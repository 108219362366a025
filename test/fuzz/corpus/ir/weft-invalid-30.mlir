func.func @reduce_no_dims(%x: tensor<4xf32>) {
  %0 = weft.reduce_sum %x dims [] : tensor<4xf32>
  return
}

func.func @reduce_dim_order(%x: tensor<4x4xf32>) {
  %0 = weft.reduce_mean %x dims [1, 1] : tensor<4x4xf32>
  return
}

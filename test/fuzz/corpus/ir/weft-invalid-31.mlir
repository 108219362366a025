func.func @reduce_dim_range(%x: tensor<4xf32>) {
  %0 = weft.reduce_max %x dims [1] : tensor<4xf32>
  return
}

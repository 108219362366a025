func.func @broadcast_dim_range(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = weft.broadcast %x dims [2] : tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

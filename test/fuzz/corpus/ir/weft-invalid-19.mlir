func.func @broadcast_dims_length(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = weft.broadcast %x dims [0, 1] : tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

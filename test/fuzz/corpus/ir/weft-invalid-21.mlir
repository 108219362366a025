func.func @broadcast_dims_order(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = weft.broadcast %x dims [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

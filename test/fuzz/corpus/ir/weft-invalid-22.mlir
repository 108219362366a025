func.func @broadcast_size(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = weft.broadcast %x dims [1] : tensor<3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

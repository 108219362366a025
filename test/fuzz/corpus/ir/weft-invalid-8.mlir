func.func @elementwise_shape_mismatch(%x: tensor<4xf32>, %y: tensor<5xf32>) -> tensor<4xf32> {
  %0 = "weft.mul"(%x, %y) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

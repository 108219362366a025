func.func @one_hot_shape(%y: tensor<2x8xi32>) {
  %0 = weft.one_hot %y : tensor<2x8xi32> -> tensor<2x256xf32>
  return
}

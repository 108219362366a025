func.func @cross_entropy_labels(%l: tensor<2x8x256xf32>, %y: tensor<2x7xi32>) {
  %0 = weft.cross_entropy %l, %y : tensor<2x8x256xf32>, tensor<2x7xi32>
  return
}

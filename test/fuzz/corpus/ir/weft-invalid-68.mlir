func.func @cross_entropy_grad_labels(%l: tensor<2x8x256xf32>, %y: tensor<8xi32>, %s: tensor<f32>) {
  %0 = weft.cross_entropy_grad %l, %y, %s : tensor<2x8x256xf32>, tensor<8xi32>
  return
}

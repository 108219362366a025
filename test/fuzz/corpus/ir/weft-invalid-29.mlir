func.func @concat_sizes(%x: tensor<2x4xf32>, %y: tensor<2x5xf32>) {
  %0 = weft.concat %x, %y dim 0 : tensor<2x4xf32>, tensor<2x5xf32>
  return
}

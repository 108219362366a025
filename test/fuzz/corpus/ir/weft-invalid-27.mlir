func.func @concat_dim(%x: tensor<4xf32>) {
  %0 = weft.concat %x, %x dim 1 : tensor<4xf32>, tensor<4xf32>
  return
}

func.func @softmax_dim(%x: tensor<2x64xf32>) {
  %0 = weft.softmax %x dim 2 : tensor<2x64xf32>
  return
}

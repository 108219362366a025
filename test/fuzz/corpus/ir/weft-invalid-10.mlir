func.func @reshape_count(%x: tensor<2x6xf32>) -> tensor<5x2xf32> {
  %0 = weft.reshape %x : tensor<2x6xf32> -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

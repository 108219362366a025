func.func @elementwise_type_mismatch(%x: tensor<4xf32>, %y: tensor<4xbf16>) -> tensor<4xf32> {
  %0 = weft.add %x, %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @elementwise_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = weft.exp %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

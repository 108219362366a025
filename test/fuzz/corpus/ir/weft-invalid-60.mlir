func.func @cast_shape(%x: tensor<4xf32>) {
  %0 = "weft.cast"(%x) : (tensor<4xf32>) -> tensor<5xbf16>
  return
}

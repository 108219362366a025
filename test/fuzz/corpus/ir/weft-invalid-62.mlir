func.func @malformed(%x: tensor<4xf32>) {
  %0 = weft.exp %x tensor<4xf32>
  return
}

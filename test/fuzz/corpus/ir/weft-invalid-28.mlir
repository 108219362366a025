func.func @concat_types(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  %0 = weft.concat %x, %y dim 0 : tensor<4xf32>, tensor<4xbf16>
  return
}

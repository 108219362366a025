func.func @reshape_element_type(%x: tensor<2x6xf32>) -> tensor<12xbf16> {
  %0 = weft.reshape %x : tensor<2x6xf32> -> tensor<12xbf16>
  return %0 : tensor<12xbf16>
}

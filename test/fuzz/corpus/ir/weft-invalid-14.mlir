func.func @matmul_element_types(%x: tensor<8x4xf32>, %w: tensor<4x8xbf16>) {
  %0 = weft.matmul %x, %w : tensor<8x4xf32>, tensor<4x8xbf16>
  return
}

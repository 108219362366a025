func.func @matmul_contraction(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>) {
  %0 = weft.matmul %x, %w : tensor<2x8x64xf32>, tensor<256x64xf32>
  return
}

func.func @matmul_batch(%x: tensor<2x8x4xf32>, %w: tensor<3x4x8xf32>) {
  %0 = weft.matmul %x, %w : tensor<2x8x4xf32>, tensor<3x4x8xf32>
  return
}

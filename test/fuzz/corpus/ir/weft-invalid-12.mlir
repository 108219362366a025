func.func @matmul_rank(%x: tensor<8xf32>, %w: tensor<8x4xf32>) {
  %0 = weft.matmul %x, %w : tensor<8xf32>, tensor<8x4xf32>
  return
}

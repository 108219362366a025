func.func @matmul_wrong_result(%x: tensor<8x4xf32>, %w: tensor<4x8xf32>) {
  %0 = "weft.matmul"(%x, %w) : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x9xf32>
  return
}

func.func @epilogue_bias_shape(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x32xf32> {
  %0 = weft.matmul_epilogue bias %x, %w bias %b : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

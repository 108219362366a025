func.func @epilogue_takes_no_bias(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0:2 = weft.matmul_epilogue gelu %x, %w bias %b : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0#0 : tensor<8x32xf32>
}

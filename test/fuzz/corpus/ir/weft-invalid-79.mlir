func.func @epilogue_contraction(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>)
  return %0#0 : tensor<8x64xf32>
}

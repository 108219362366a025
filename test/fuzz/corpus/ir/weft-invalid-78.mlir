func.func @epilogue_mixed_types(%x: tensor<8x64xbf16>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<8x64xbf16>, tensor<64x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0#0 : tensor<8x32xf32>
}

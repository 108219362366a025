func.func @epilogue_batched_weight(%x: tensor<2x8x64xf32>, %w: tensor<2x64x32xf32>) -> tensor<2x8x32xf32> {
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<2x8x64xf32>, tensor<2x64x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  return %0#0 : tensor<2x8x32xf32>
}

func.func @epilogue_preactivation_type(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %p: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %0 = weft.matmul_epilogue dgelu %x, %w preactivation %p : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<8x64xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

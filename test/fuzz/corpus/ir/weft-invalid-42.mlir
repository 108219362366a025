func.func @rope_rank(%x: tensor<2x8x64xf32>) {
  %0 = weft.rope %x : tensor<2x8x64xf32>
  return
}

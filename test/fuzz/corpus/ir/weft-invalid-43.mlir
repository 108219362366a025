func.func @rope_odd(%x: tensor<2x8x4x15xf32>) {
  %0 = weft.rope %x : tensor<2x8x4x15xf32>
  return
}

func.func @rope_theta(%x: tensor<2x8x4x16xf32>) {
  %0 = weft.rope %x {theta = 0.0 : f64} : tensor<2x8x4x16xf32>
  return
}

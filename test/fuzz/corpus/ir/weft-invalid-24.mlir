func.func @slice_rank(%x: tensor<4x4xf32>) {
  %0 = weft.slice %x [0] to [2] : tensor<4x4xf32>
  return
}

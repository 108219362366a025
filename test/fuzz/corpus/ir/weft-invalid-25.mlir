func.func @slice_bounds(%x: tensor<4x4xf32>) {
  %0 = weft.slice %x [0, 2] to [4, 5] : tensor<4x4xf32>
  return
}

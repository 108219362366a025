func.func @assign_type(%x: tensor<4xf32>) {
  %w = weft.param "w" init(zeros) : tensor<5xf32>
  weft.assign "w", %x : tensor<4xf32>
  return
}

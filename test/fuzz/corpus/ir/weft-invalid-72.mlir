func.func @assign_unknown(%x: tensor<4xf32>) {
  weft.assign "w", %x : tensor<4xf32>
  return
}

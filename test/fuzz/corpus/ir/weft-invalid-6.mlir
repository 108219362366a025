func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = weft.exp %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

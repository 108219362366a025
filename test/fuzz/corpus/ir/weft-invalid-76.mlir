func.func @fused_arguments(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = weft.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<5xf32>):
    weft.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

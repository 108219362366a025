func.func @fused_nonelementwise(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = weft.fused(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %m = weft.matmul %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
    weft.yield %m : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

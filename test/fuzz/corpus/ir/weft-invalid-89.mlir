func.func @fused_broadcast_of_a_vector(%b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = weft.fused(%b) : (tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %1 = weft.broadcast %a dims [1] : tensor<8xf32> -> tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

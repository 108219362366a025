func.func @fused_yield_types(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %0 = weft.fused(%x) : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xf32>):
    %e = weft.exp %a : tensor<4xf32>
    weft.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xbf16>
}

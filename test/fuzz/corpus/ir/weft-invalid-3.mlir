func.func @param_negative_scale() -> tensor<4xf32> {
  %0 = weft.param "w" init(uniform, -1.0) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @param_normal_needs_scale() -> tensor<4xf32> {
  %0 = weft.param "w" init(normal) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

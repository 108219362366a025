func.func @param_zeros_takes_no_scale() -> tensor<4xf32> {
  %0 = weft.param "w" init(zeros, 1.0) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

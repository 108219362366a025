func.func @param_duplicate() -> tensor<4xf32> {
  %0 = weft.param "w" init(zeros) : tensor<4xf32>
  %1 = weft.param "w" init(ones) : tensor<4xf32>
  return %1 : tensor<4xf32>
}

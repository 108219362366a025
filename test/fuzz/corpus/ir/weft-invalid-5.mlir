func.func @param_int() -> tensor<4xi32> {
  %0 = weft.param "w" init(zeros) : tensor<4xi32>
  return %0 : tensor<4xi32>
}

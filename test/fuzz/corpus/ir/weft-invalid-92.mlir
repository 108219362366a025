func.func @params() {
  %a = weft.param "a" init(zeros) : tensor<4xf32>
  %b = weft.param "b" init(zeros) : tensor<4xf32>
  weft.assign "a", %a : tensor<4xf32>
  %c = weft.param "b" init(zeros) : tensor<4xf32>
  return
}

// Every verifier and shape-inference error of the weft dialect.

func.func @param_empty_name() -> tensor<4xf32> {
  %0 = weft.param "" init(zeros) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

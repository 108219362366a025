func.func @dropout_rate(%x: tensor<4xf32>) {
  %0 = weft.dropout %x {rate = 1.0 : f64, seed = 0 : i64} : tensor<4xf32>
  return
}

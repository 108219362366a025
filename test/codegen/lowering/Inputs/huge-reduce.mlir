// 2^60 outputs (a 2^62-byte buffer) take 2^63 bytes of GPU partials.
func.func @f(%x: tensor<1152921504606846976x1xf32>) -> tensor<1152921504606846976xf32> {
  %0 = weft.reduce_sum %x dims [1] : tensor<1152921504606846976x1xf32>
  return %0 : tensor<1152921504606846976xf32>
}

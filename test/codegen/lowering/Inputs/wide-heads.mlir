func.func @f(%q: tensor<1x8x2x160xbf16>) -> tensor<1x8x2x160xbf16> {
  %o, %lse = weft.attention %q, %q, %q scale = 0.1 : tensor<1x8x2x160xbf16>, tensor<1x8x2x160xbf16>, tensor<1x8x2x160xbf16>
  return %o : tensor<1x8x2x160xbf16>
}

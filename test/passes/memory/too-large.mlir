// RUN: weft-opt %s -weft-memory-plan -verify-diagnostics

// Three 2^61-byte values live at once need 1.5 * 2^62 bytes: the plan
// refuses at the one that does not fit (it and its two peers are the
// largest), before any offset or arena size can overflow int64.
func.func @huge(%x: tensor<576460752303423488xf32>) -> tensor<576460752303423488xf32> {
  %a = weft.exp %x : tensor<576460752303423488xf32>
  %b = weft.exp %a : tensor<576460752303423488xf32>
  // expected-error @below {{this value's buffer of 2305843009213693952 bytes and the 2 others live at the same time need 6917529027641081856 bytes: larger than a memory arena may be (at most 2^62 bytes)}}
  %c = weft.add %a, %b : tensor<576460752303423488xf32>
  return %c : tensor<576460752303423488xf32>
}

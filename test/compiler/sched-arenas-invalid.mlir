// RUN: weft-opt %s -split-input-file -weft-sched-arenas -verify-diagnostics

// weft-sched-arenas lowers a copy of the module; what the lowering refuses
// is reported at the module's own op, and the pass fails.
func.func @forward() -> tensor<4xf32> {
  %w = weft.param "w" init(zeros) : tensor<4xf32>
  return %w : tensor<4xf32>
}
func.func @step() -> tensor<8xf32> {
  // expected-error @+1 {{parameter 'w' is '!sched.buffer<8xf32>' here but '!sched.buffer<4xf32>' in an earlier program}}
  %w = weft.param "w" init(zeros) : tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// So is what the sched plan refuses: a 2^62-byte value and a reduction of
// it live at once need more bytes than an arena holds.
func.func @huge(%x: tensor<1152921504606846976xf32>) -> (tensor<1152921504606846976xf32>, tensor<f32>) {
  // expected-error @+1 {{larger than a memory arena may be (at most 2^62 bytes)}}
  %a = weft.exp %x : tensor<1152921504606846976xf32>
  %s = weft.reduce_sum %a dims [0] : tensor<1152921504606846976xf32>
  return %a, %s : tensor<1152921504606846976xf32>, tensor<f32>
}

// RUN: weft-opt %s -split-input-file -weft-optimizer-adamw -verify-diagnostics

// expected-error @below {{weft-optimizer-adamw: @train_step is not a gradient function (run weft-autodiff first)}}
func.func @train_step() -> tensor<f32> {
  %x = weft.constant dense<1.0> : tensor<f32>
  return %x : tensor<f32>
}

// -----

// expected-error @below {{weft-optimizer-adamw: no function named @train_step}}
module {
}

// -----

func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<2xbf16> {weft.grad = "w"}) {
  %l = weft.constant dense<1.0> : tensor<f32>
  // expected-error @below {{weft-optimizer-adamw: only f32 parameters are supported yet, got 'tensor<2xbf16>'}}
  %w = weft.param "w" init(zeros) : tensor<2xbf16>
  return %l, %w : tensor<f32>, tensor<2xbf16>
}

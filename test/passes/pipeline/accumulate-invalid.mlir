// RUN: weft-opt %s -split-input-file -weft-accumulate-gradients=microbatches=2 -verify-diagnostics

// expected-error @below {{weft-accumulate-gradients: @train_step is not a gradient function (run weft-autodiff first)}}
func.func @train_step() -> tensor<f32> {
  %x = weft.constant dense<1.0> : tensor<f32>
  return %x : tensor<f32>
}

// -----

// expected-error @below {{weft-accumulate-gradients: no function named @train_step}}
module {
}

// -----

// expected-error @below {{weft-accumulate-gradients: result 1 of @train_step is not the gradient of a parameter}}
func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<2xf32> {weft.grad = "nope"}) {
  %l = weft.constant dense<1.0> : tensor<f32>
  %w = weft.param "w" init(zeros) : tensor<2xf32>
  return %l, %w : tensor<f32>, tensor<2xf32>
}

// -----

func.func @accumulate() {
  return
}
// expected-error @below {{weft-accumulate-gradients: a symbol named @accumulate already exists}}
func.func @train_step() -> (tensor<f32> {weft.output = "loss"}) {
  %l = weft.constant dense<1.0> : tensor<f32>
  return %l : tensor<f32>
}

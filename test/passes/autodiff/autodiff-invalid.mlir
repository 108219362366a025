// RUN: weft-opt %s -split-input-file -weft-autodiff -verify-diagnostics

// expected-error @below {{weft-autodiff: the first result of @forward must be the 0-d f32 loss}}
func.func @forward() -> tensor<2xf32> {
  %x = weft.param "x" init(zeros) : tensor<2xf32>
  return %x : tensor<2xf32>
}

// -----

func.func @forward() -> tensor<f32> {
  %x = weft.param "x" init(zeros) : tensor<2xf32>
  // expected-error @below {{weft-autodiff: no gradient rule for 'weft.ge'}}
  %m = weft.ge %x, %x : tensor<2xf32>
  %loss = weft.reduce_sum %m dims [0] : tensor<2xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @below {{weft-autodiff: no function named @forward}}
module {
  func.func @other() {
    return
  }
}

// -----

func.func @forward() -> tensor<f32> {
  %x = weft.param "x" init(zeros) : tensor<2xf32>
  // expected-error @below {{weft-autodiff: @forward calls itself: Weft compiles a single function; inline the callee}}
  %r = func.call @forward() : () -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func private @helper(tensor<2xf32>) -> tensor<f32>

func.func @forward() -> tensor<f32> {
  %x = weft.param "x" init(zeros) : tensor<2xf32>
  // expected-error @below {{weft-autodiff: @forward calls @helper: Weft compiles a single function; inline the callee}}
  %r = func.call @helper(%x) : (tensor<2xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @forward() -> tensor<f32> {
  %x = weft.param "x" init(zeros) : tensor<2xf32>
  // expected-error @below {{weft-autodiff: @forward may not assign parameter 'x': the optimizer step Weft builds updates parameters}}
  weft.assign "x", %x : tensor<2xf32>
  %loss = weft.reduce_sum %x dims [0] : tensor<2xf32>
  return %loss : tensor<f32>
}

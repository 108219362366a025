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

// -----

// ZeRO-1 reads the dp axis from the mesh the plan declared; without one
// there is nothing to shard over.
// expected-error @below {{weft-optimizer-adamw: weft.zero = 1 shards the optimizer state over mesh axis 'dp', but @mesh has no 'dp' axis of size 2 or more}}
module attributes {weft.zero = 1 : i64} {
  weft.mesh @mesh axes ["tp"] sizes [2]
  func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<2xf32> {weft.grad = "w"}) {
    %l = weft.constant dense<1.0> : tensor<f32>
    %w = weft.param "w" init(zeros) : tensor<2xf32>
    return %l, %w : tensor<f32>, tensor<2xf32>
  }
}

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

// An optimizer split (ZeRO-1/2) over an axis its mesh lacks, or of more
// than one dimension, is refused at the parameter.
module {
  weft.mesh @mesh axes ["tp"] sizes [2]
  func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<2xf32> {weft.grad = "w"}) {
    %l = weft.constant dense<1.0> : tensor<f32>
    // expected-error @below {{weft-optimizer-adamw: weft.optimizer_shard splits over mesh axis 'dp', which @mesh lacks}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"]]>} : tensor<2xf32>
    return %l, %w : tensor<f32>, tensor<2xf32>
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
  func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<2x2xf32> {weft.grad = "w"}) {
    %l = weft.constant dense<1.0> : tensor<f32>
    // expected-error @below {{weft-optimizer-adamw: weft.optimizer_shard splits more than one dimension}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"], ["tp"]]>} : tensor<2x2xf32>
    return %l, %w : tensor<f32>, tensor<2x2xf32>
  }
}

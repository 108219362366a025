// RUN: weft-opt %s -split-input-file -verify-diagnostics -weft-apply-plan=plan=dp=3

// expected-error @+1 {{batch 8 of input 0 is not divisible by dp=3}}
func.func @forward(%tokens: tensor<8x4xi32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %c = weft.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// expected-error @+1 {{the module already declares @mesh}}
module {
  weft.mesh @mesh axes ["tp"] sizes [2]
  func.func @forward(%tokens: tensor<6x4xi32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
    %c = weft.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// expected-error @+1 {{the model has no @forward function}}
module {
  func.func @other() {
    return
  }
}

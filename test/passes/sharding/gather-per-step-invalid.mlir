// RUN: weft-opt %s -split-input-file -weft-gather-per-step -verify-diagnostics

// weft-gather-per-step needs weft-accumulate-gradients' @accumulate, a free
// @gather name and free `.gathered` names, and one whole type per
// parameter.

// expected-error @below {{weft-gather-per-step: needs @accumulate (run weft-accumulate-gradients first)}}
module {
  func.func @step() {
    return
  }
}

// -----

// expected-error @below {{weft-gather-per-step: a symbol named @gather already exists}}
module {
  func.func @gather() {
    return
  }
  func.func @accumulate() {
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [2]
  func.func @accumulate() -> tensor<4xf32> {
    // expected-error @below {{weft-gather-per-step: parameter 'w' would be gathered into 'w.gathered', which already exists}}
    %w = weft.param "w" init(zeros) {weft.shard_of = #weft.sharding<@mesh, [["dp"]]>} : tensor<2xf32>
    %taken = weft.param "w.gathered" init(zeros) state : tensor<4xf32>
    %g = weft.all_gather %w over @mesh ["dp"] dim 0 : tensor<2xf32> -> tensor<4xf32>
    return %g : tensor<4xf32>
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [2]
  func.func @accumulate() -> (tensor<4x2xf32>, tensor<2x4xf32>) {
    %w = weft.param "w" init(zeros) {weft.shard_of = #weft.sharding<@mesh, [["dp"], []]>} : tensor<2x2xf32>
    %rows = weft.all_gather %w over @mesh ["dp"] dim 0 : tensor<2x2xf32> -> tensor<4x2xf32>
    // expected-error @below {{weft-gather-per-step: parameter 'w' is gathered to 'tensor<4x2xf32>' and to 'tensor<2x4xf32>'}}
    %cols = weft.all_gather %w over @mesh ["dp"] dim 1 : tensor<2x2xf32> -> tensor<2x4xf32>
    return %rows, %cols : tensor<4x2xf32>, tensor<2x4xf32>
  }
}

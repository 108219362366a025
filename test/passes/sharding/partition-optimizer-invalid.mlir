// RUN: weft-opt %s -split-input-file -weft-partition-optimizer -verify-diagnostics

// An optimizer split (ZeRO-1/2) that is not one dimension over axes of its
// mesh dividing it is refused at the parameter, and so is one the
// optimizer has not written the update of.

module {
  weft.mesh @mesh axes ["tp"] sizes [2]
  func.func @step() {
    // expected-error @below {{weft-partition-optimizer: weft.optimizer_shard splits over mesh axis 'dp', which @mesh lacks}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"]]>} : tensor<2xf32>
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
  func.func @step() {
    // expected-error @below {{weft-partition-optimizer: weft.optimizer_shard splits more than one dimension}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"], ["tp"]]>} : tensor<2x2xf32>
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [4]
  func.func @step() {
    // expected-error @below {{weft-partition-optimizer: weft.optimizer_shard splits dimension 0 of 'tensor<6xf32>' into 4 blocks, which do not divide it}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"]]>} : tensor<6xf32>
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [2]
  func.func @step() {
    // expected-error @below {{weft-partition-optimizer: weft.optimizer_shard names @grid, which is not a weft.mesh}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@grid, [["dp"]]>} : tensor<2xf32>
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [2]
  func.func @step() {
    // expected-error @below {{weft-partition-optimizer: parameter 'w' has an optimizer split but no gradient tagged weft.grad_of (run weft-optimizer-adamw first)}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"]]>} : tensor<2xf32>
    return
  }
}

// -----

module {
  weft.mesh @mesh axes ["dp"] sizes [2]
  func.func @step(%g: tensor<2xf32>) {
    // expected-error @below {{weft-partition-optimizer: parameter 'w' has no Adam moments (run weft-optimizer-adamw first)}}
    %w = weft.param "w" init(zeros) {weft.optimizer_shard = #weft.sharding<@mesh, [["dp"]]>} : tensor<2xf32>
    %d = weft.neg %g {weft.grad_of = ["w"]} : tensor<2xf32>
    return
  }
}

// -----

// expected-error @below {{weft-partition-optimizer: no function @step}}
module {
}

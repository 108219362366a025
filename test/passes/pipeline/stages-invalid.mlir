// RUN: weft-opt %s -split-input-file -weft-pipeline-assign-stages=stages=3 -verify-diagnostics
// RUN: not weft-opt %s -split-input-file '-weft-pipeline-assign-stages=stages=2 boundaries=0-1,1-1' 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: not weft-opt %s -split-input-file '-weft-pipeline-assign-stages=stages=1 boundaries=1-1' 2>&1 | FileCheck %s --check-prefix=GAP
// RUN: not weft-opt %s -split-input-file '-weft-pipeline-assign-stages=stages=1 boundaries=0-0' 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not weft-opt %s -split-input-file '-weft-pipeline-assign-stages=stages=1 boundaries=0-0,1-1' 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not weft-opt %s -split-input-file '-weft-pipeline-assign-stages=stages=1 boundaries=0-5' 2>&1 | FileCheck %s --check-prefix=PAST
// OVERLAP: stages: 1-1 overlaps the stage before it
// GAP: stages: layers 0-0 are in no stage
// MISSING: stages: layers 1-1 are in no stage
// COUNT: stages: 2 ranges for 1 pipeline stages
// PAST: stages: 0-5 goes past the model's last layer 1

// expected-error @below {{weft-pipeline-assign-stages: @forward has 2 layers, fewer than the 3 pipeline stages}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %h0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @below {{weft-pipeline-assign-stages: no parameter of @forward carries weft.layer; pipeline stages are cut between layers}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) : tensor<4x4xf32>
  %h0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h0 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

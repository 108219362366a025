// RUN: not weft-opt %s -weft-pipeline-assign-stages=stages=2 -weft-autodiff -weft-accumulate-gradients=microbatches=1 -weft-optimizer-adamw=keep-func=false -weft-pipeline-split=schedule=1f1b 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not weft-opt %s -weft-pipeline-assign-stages=stages=2 -weft-autodiff -weft-accumulate-gradients=microbatches=2 -weft-optimizer-adamw=keep-func=false -weft-pipeline-split=schedule=zigzag 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not weft-opt %s -weft-pipeline-assign-stages=stages=2 -weft-autodiff -weft-accumulate-gradients=microbatches=2 -weft-optimizer-adamw=keep-func=false '-weft-pipeline-split=schedule=interleaved chunks=2' 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not weft-opt %s -weft-pipeline-split 2>&1 | FileCheck %s --check-prefix=ORDER
// The loss scale's copies must move alike on every pipeline rank: an
// update that reads the stages' shares of the norm without their sum over
// pp (the all-reduce taken out here) is refused.
// RUN: weft-opt %s -weft-pipeline-assign-stages=stages=2 '-weft-autodiff=loss-scale=1024' -weft-accumulate-gradients=microbatches=2 -weft-optimizer-adamw=keep-func=false | sed 's/weft.all_reduce sum \(%[0-9]*\) over @mesh \["pp"\] :/weft.sqrt \1 :/' | not weft-opt -weft-pipeline-split=schedule=1f1b 2>&1 | FileCheck %s --check-prefix=SCALE

// 1F1B keeps one micro-batch per stage in flight: fewer micro-batches than
// pipeline ranks cannot fill it.
// FEW: error: weft-pipeline-split: {{.*}}1f1b{{.*}}micro-batches
// NAME: error: weft-pipeline-split: {{.*}}zigzag
// CHUNKS: error: weft-pipeline-split: @accumulate is cut into 2 stages (weft-pipeline-assign-stages), but pp=2 with 2 virtual stages per rank needs 4
// ORDER: error: weft-pipeline-split: needs @accumulate and @step (run weft-accumulate-gradients and the optimizer first)
// SCALE: error: weft-pipeline-split: the loss scale's update reads a sum of stages' shares not summed over pp; every pipeline rank must update its copy alike
weft.mesh @mesh axes ["pp"] sizes [2]
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "w0" init(ones) {weft.layer = 0 : i64} : tensor<4x4xf32>
  %w1 = weft.param "w1" init(ones) {weft.layer = 1 : i64} : tensor<4x4xf32>
  %h0 = weft.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = weft.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// RUN: weft-opt %s -weft-sharding-propagate -weft-partition | FileCheck %s
// RUN: weft-opt %s -weft-sharding-propagate -weft-partition -weft-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: weft-opt %s -weft-sharding-propagate -weft-partition -weft-autodiff -weft-accumulate-gradients=microbatches=2 | FileCheck %s --check-prefix=MICRO

// Dropout on activations split over dp (the batch) and tp (the sequence,
// as sequence parallelism splits it) stays split: each rank draws its block
// of the global tensor's mask, so nothing is gathered. Partitioning records
// the split on the op; the gradient's dropout masks with the same block.

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 2]

func.func @forward(%x: tensor<8x16x64xf32> {weft.input = "x", weft.sharding = #weft.sharding<@mesh, [["dp"], ["tp"], []]>})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(ones) : tensor<64xf32>
  %step = weft.param "dropout_step" init(zeros) state : tensor<f32>
  %wb = weft.broadcast %w dims [2] : tensor<64xf32> -> tensor<8x16x64xf32>
  %h = weft.mul %x, %wb : tensor<8x16x64xf32>
  %d = weft.dropout %h step %step : tensor<f32> {rate = 0.1 : f64, seed = 3 : i64} : tensor<8x16x64xf32>
  %loss = weft.reduce_sum %d dims [0, 1, 2] : tensor<8x16x64xf32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @forward
// CHECK-NOT: weft.all_gather
// CHECK: weft.dropout %{{.*}} step %{{.*}} : tensor<f32> {rate = 1.000000e-01 : f64, seed = 3 : i64, split = {{\[}}["dp"], ["tp"], []]} : tensor<4x8x64xf32>
// CHECK-NOT: weft.all_gather
// CHECK: weft.all_reduce sum

// GRAD-LABEL: func.func @train_step
// GRAD-NOT: weft.all_gather
// GRAD: weft.dropout %{{.*}} {{.*}}split = {{\[}}["dp"], ["tp"], []]} : tensor<4x8x64xf32>
// GRAD: weft.dropout %{{.*}} {{.*}}seed = 3 : i64, split = {{\[}}["dp"], ["tp"], []]} : tensor<4x8x64xf32>

// Micro-batches: @accumulate counts them in the state parameter
// dropout_microbatch, which every dropout reads (micro-batch k draws its
// block of the step's mask); the step resets it.
// MICRO-LABEL: func.func @accumulate
// MICRO: %[[K:.*]] = weft.param "dropout_microbatch" init(zeros) state {weft.transient} : tensor<f32>
// MICRO: weft.dropout %{{.*}} step %{{.*}} : tensor<f32> microbatch %[[K]] : tensor<f32> {microbatches = 2 : i64, rate = 1.000000e-01 : f64, seed = 3 : i64, split = {{\[}}["dp"], ["tp"], []]}
// MICRO: weft.dropout %{{.*}} microbatch %[[K]] : tensor<f32> {microbatches = 2 : i64
// MICRO: %[[ONE:.*]] = weft.constant dense<1.000000e+00> : tensor<f32>
// MICRO: %[[NEXT:.*]] = weft.add %[[K]], %[[ONE]] : tensor<f32>
// MICRO: weft.assign "dropout_microbatch", %[[NEXT]] : tensor<f32>
// MICRO-NEXT: return
// MICRO-LABEL: func.func @train_step
// MICRO: weft.param "dropout_microbatch" init(zeros) state {weft.transient} : tensor<f32>
// MICRO: %[[ZERO:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// MICRO-NEXT: weft.assign "dropout_microbatch", %[[ZERO]] : tensor<f32>

// RUN: weft-opt %s -weft-accumulate-gradients=microbatches=4 | FileCheck %s
// RUN: weft-opt %s -weft-accumulate-gradients=microbatches=1 | FileCheck %s --check-prefix=ONE

// A gradient function of one parameter becomes @accumulate, run once per
// micro-batch (it adds the gradient and the loss into state accumulators
// and returns the micro-batch's loss), and @train_step without inputs, which
// returns the accumulators' mean (the tags AdamW reads kept) and zeroes them.
// CHECK-LABEL: func.func @accumulate(%{{.*}}: tensor<2x3xf32>) -> (tensor<f32> {weft.output = "loss"}) attributes {weft.microbatches = 4 : i64}
// CHECK-DAG: %[[LACC:.*]] = weft.param "loss.accumulated" init(zeros) state {weft.transient} : tensor<f32>
// CHECK-DAG: %[[WACC:.*]] = weft.param "w.grad_acc" init(zeros) state {weft.transient} : tensor<3xf32>
// CHECK: %[[LOSS:.*]] = weft.reduce_sum
// CHECK: %[[LSUM:.*]] = weft.add %[[LACC]], %[[LOSS]]
// CHECK: weft.assign "loss.accumulated", %[[LSUM]]
// CHECK: %[[WSUM:.*]] = weft.add %[[WACC]], %[[G:.*]] :
// CHECK: weft.assign "w.grad_acc", %[[WSUM]]
// CHECK: return %[[LOSS]] : tensor<f32>

// CHECK-LABEL: func.func @train_step() -> (tensor<f32> {weft.output = "loss"}, tensor<3xf32> {weft.grad = "w"})
// CHECK: weft.param "w" init(zeros) : tensor<3xf32>
// CHECK: %[[L:.*]] = weft.param "loss.accumulated" init(zeros) state {weft.transient} : tensor<f32>
// CHECK: %[[QUARTER:.*]] = weft.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[LMEAN:.*]] = weft.mul %[[L]], %[[QUARTER]]
// CHECK: %[[ZERO:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// CHECK: weft.assign "loss.accumulated", %[[ZERO]]
// CHECK: %[[W:.*]] = weft.param "w.grad_acc" init(zeros) state {weft.transient} : tensor<3xf32>
// CHECK: %[[WMEAN:.*]] = weft.mul %[[W]], %{{.*}} : tensor<3xf32>
// CHECK: weft.assign "w.grad_acc", %{{.*}} : tensor<3xf32>
// CHECK: return %[[LMEAN]], %[[WMEAN]]
// ONE-NOT: accumulate
// ONE: func.func @train_step(%{{.*}}: tensor<2x3xf32>)
func.func @train_step(%x: tensor<2x3xf32>) -> (tensor<f32> {weft.output = "loss"}, tensor<3xf32> {weft.grad = "w"}) {
  %w = weft.param "w" init(zeros) : tensor<3xf32>
  %b = weft.broadcast %w dims [1] : tensor<3xf32> -> tensor<2x3xf32>
  %y = weft.mul %x, %b : tensor<2x3xf32>
  %loss = weft.reduce_sum %y dims [0, 1] : tensor<2x3xf32>
  %g = weft.reduce_sum %x dims [0] : tensor<2x3xf32>
  return %loss, %g : tensor<f32>, tensor<3xf32>
}

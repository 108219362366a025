// RUN: weft-opt %s -split-input-file -weft-autodiff -weft-optimizer-adamw="weight-decay=0.5 max-grad-norm=2.0" | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-autodiff -weft-optimizer-adamw="weight-decay=0.5 max-grad-norm=2.0" -weft-partition-optimizer | FileCheck %s --check-prefix=HELD

// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<f32> {weft.input = "lr"}, %{{.*}}: tensor<f32> {weft.input = "step"})
// CHECK-SAME: -> (tensor<f32> {weft.output = "loss"}, tensor<f32> {weft.output = "grad_norm"})
// The moments are state parameters next to the parameters. The op that
// makes each gradient says whose it is (weft.grad_of), for the pass that
// places the update; it then records the gradient elements this rank holds
// (the memory report reads them).
// CHECK: %[[W:.*]] = weft.param "w" init(normal, 1.000000e-01) : tensor<4x3xf32>
// CHECK: %[[B:.*]] = weft.param "b" init(zeros) : tensor<3xf32>
// CHECK: weft.param "w.exp_avg" init(zeros) state : tensor<4x3xf32>
// CHECK: weft.param "w.exp_avg_sq" init(zeros) state : tensor<4x3xf32>
// CHECK: weft.param "b.exp_avg" init(zeros) state : tensor<3xf32>
// CHECK: weft.param "b.exp_avg_sq" init(zeros) state : tensor<3xf32>
// CHECK: weft.matmul {{.*}} {weft.grad_of = ["w"]}
// HELD: weft.param "w" init(normal, 1.000000e-01) {weft.grad_elements = 12 : i64} : tensor<4x3xf32>
// HELD: weft.param "b" init(zeros) {weft.grad_elements = 3 : i64} : tensor<3xf32>
// HELD-NOT: weft.grad_of
// Global norm and clip factor 2 / max(norm + 1e-6, 2).
// CHECK: %[[NORM:.*]] = weft.sqrt %{{.*}} : tensor<f32>
// CHECK: weft.constant dense<2.000000e+00> : tensor<f32>
// CHECK: weft.max
// Weight decay applies to the matrix only.
// CHECK: weft.constant dense<5.000000e-01> : tensor<f32>
// CHECK: weft.assign "w", %{{.*}} : tensor<4x3xf32>
// CHECK: weft.assign "w.exp_avg", %{{.*}} : tensor<4x3xf32>
// CHECK: weft.assign "w.exp_avg_sq", %{{.*}} : tensor<4x3xf32>
// CHECK-NOT: dense<5.000000e-01>
// CHECK: weft.assign "b", %{{.*}} : tensor<3xf32>
// CHECK: return %{{.*}}, %[[NORM]] : tensor<f32>, tensor<f32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = weft.param "w" init(normal, 0.1) : tensor<4x3xf32>
  %b = weft.param "b" init(zeros) : tensor<3xf32>
  %y = weft.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %bb = weft.broadcast %b dims [1] : tensor<3xf32> -> tensor<2x3xf32>
  %z = weft.add %y, %bb : tensor<2x3xf32>
  %loss = weft.reduce_mean %z dims [0, 1] : tensor<2x3xf32>
  return %loss : tensor<f32>
}

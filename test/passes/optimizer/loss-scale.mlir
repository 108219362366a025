// RUN: weft-opt %s -weft-autodiff="loss-scale=1024 loss-scale-window=3" -weft-optimizer-adamw | FileCheck %s
// RUN: not weft-opt %s -weft-autodiff="loss-scale=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// Dynamic loss scaling. Autodiff declares the scale (a state parameter,
// ones, times the initial scale) and starts the backward from it; the step
// unscales the gradients before the norm, treats an infinite or NaN norm as
// an overflow (ok = 0), keeps every parameter and moment then (select), and
// moves the scale: halved after an overflow, doubled after 3 clean steps.
func.func @forward(%x: tensor<2x4xf32> {weft.input = "x"},
                   %labels: tensor<2xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 1.0e-01) : tensor<4x3xf32>
  %y = weft.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %loss = weft.cross_entropy %y, %labels : tensor<2x3xf32>, tensor<2xi32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @step
// CHECK-SAME: -> (tensor<f32> {weft.output = "loss"}, tensor<f32> {weft.output = "grad_norm"}, tensor<f32> {weft.output = "loss_scale"}, tensor<f32> {weft.output = "skipped"})
// CHECK: %[[S:.*]] = weft.param "loss_scale" init(ones) state {weft.loss_scale = 1.024000e+03 : f64, weft.loss_scale_window = 3 : i64} : tensor<f32>
// CHECK-DAG: weft.param "optimizer_step" init(zeros) state : tensor<f32>
// CHECK-DAG: weft.param "loss_scale_good_steps" init(zeros) state : tensor<f32>
// The backward's seed: the scale.
// CHECK: %[[INITIAL:.*]] = weft.constant dense<1.024000e+03> : tensor<f32>
// CHECK: %[[SEED:.*]] = weft.mul %[[S]], %[[INITIAL]] : tensor<f32>
// CHECK: weft.cross_entropy_grad
// The gradient unscaled: times 1 / scale.
// CHECK: %[[USED:.*]] = weft.mul %[[S]], %{{.*}} : tensor<f32>
// CHECK: %[[INV:.*]] = weft.div %{{.*}}, %[[USED]] : tensor<f32>
// CHECK: weft.sqrt
// Overflow: ok = (f32 max >= norm).
// CHECK: %[[OK:.*]] = weft.ge %{{.*}}, %{{.*}} : tensor<f32>
// CHECK: weft.assign "optimizer_step"
// CHECK: weft.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3xf32>
// CHECK: weft.assign "w", %{{.*}} : tensor<4x3xf32>
// Halved, doubled or kept, never below 1 (1 / 1024 of the initial scale).
// CHECK: %[[FLOOR:.*]] = weft.constant dense<9.765625E-4> : tensor<f32>
// CHECK: %[[NEXT:.*]] = weft.max %{{.*}}, %[[FLOOR]] : tensor<f32>
// CHECK: weft.assign "loss_scale", %[[NEXT]] : tensor<f32>
// CHECK: weft.assign "loss_scale_good_steps", %{{.*}} : tensor<f32>
// CHECK: return %{{.*}}, %{{.*}}, %[[USED]], %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>

// BAD: error: weft-autodiff: loss-scale must be 0 (off) or a positive finite scale

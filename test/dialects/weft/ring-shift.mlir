// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s
// RUN: weft-opt %s -weft-autodiff | FileCheck %s --check-prefix=GRAD

// ring_shift round-trips; its gradient is the opposite shift, so dK/dV go
// back round the ring.

weft.mesh @mesh axes ["cp"] sizes [4]

// CHECK-LABEL: func.func @forward
// GRAD-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x8xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.02) : tensor<2x8xf32>
  %y = weft.mul %w, %x : tensor<2x8xf32>
  // CHECK: weft.ring_shift %{{.*}} over @mesh "cp" offset 1 : tensor<2x8xf32>
  %s = weft.ring_shift %y over @mesh "cp" offset 1 : tensor<2x8xf32>
  // Integer positions travel too (no gradient).
  %p = weft.constant dense<[0, 1]> : tensor<2xi32>
  // CHECK: weft.ring_shift %{{.*}} over @mesh "cp" offset 1 : tensor<2xi32>
  %q = weft.ring_shift %p over @mesh "cp" offset 1 : tensor<2xi32>
  // GRAD: weft.ring_shift %{{.*}} over @mesh "cp" offset -1 : tensor<2x8xf32>
  // GRAD-NOT: offset -1 : tensor<2xi32>
  %l = weft.reduce_sum %s dims [0, 1] : tensor<2x8xf32>
  return %l : tensor<f32>
}

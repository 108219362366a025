// RUN: weft-opt %s -split-input-file -weft-decompose | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-decompose=ops=weft.attention | FileCheck %s --check-prefix=KEEP

// CHECK-LABEL: func.func @gqa_attention
// KEEP-LABEL: func.func @gqa_attention
func.func @gqa_attention(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>) -> tensor<2x8x4x16xf32> {
  // CHECK-NOT: weft.attention
  // CHECK: %[[Q:.*]] = weft.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  // CHECK: %[[KT:.*]] = weft.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x2x16xf32>
  // CHECK: %[[KB:.*]] = weft.broadcast %[[KT]] dims [0, 1, 3, 4] : tensor<2x2x8x16xf32> -> tensor<2x2x2x8x16xf32>
  // CHECK: %[[K:.*]] = weft.reshape %[[KB]] : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: %[[S:.*]] = weft.matmul %[[Q]], %[[K]] transpose_rhs : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  // CHECK: weft.constant dense<2.500000e-01> : tensor<2x4x8x8xf32>
  // CHECK: weft.constant dense<{{.*}}0xFF800000{{.*}}> : tensor<8x8xf32>
  // CHECK: weft.reduce_max %{{.*}} dims [3]
  // CHECK: weft.exp
  // CHECK: weft.reduce_sum %{{.*}} dims [3]
  // CHECK: weft.log
  // CHECK: %[[P:.*]] = weft.exp
  // CHECK: %[[O:.*]] = weft.matmul %[[P]], %{{.*}} : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  // CHECK: weft.transpose %[[O]] [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  // CHECK-NOT: weft.softmax
  // KEEP-NOT: weft.attention
  // KEEP: weft.log
  %0:2 = weft.attention %q, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  return %0#0 : tensor<2x8x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @norms
// KEEP-LABEL: func.func @norms
func.func @norms(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[MEAN:.*]] = weft.reduce_mean %[[X:.*]] dims [1] : tensor<4x8xf32>
  // CHECK: %[[MB:.*]] = weft.broadcast %[[MEAN]] dims [0] : tensor<4xf32> -> tensor<4x8xf32>
  // CHECK: %[[C:.*]] = weft.sub %[[X]], %[[MB]]
  // CHECK: weft.square %[[C]]
  // CHECK: weft.constant dense<9.99999974E-6> : tensor<4x8xf32>
  // CHECK: weft.rsqrt
  // CHECK: weft.broadcast %{{.*}} dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  // KEEP: weft.layer_norm
  %0 = weft.layer_norm %x, %g, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: weft.square %[[X]]
  // CHECK: weft.reduce_mean
  // CHECK: weft.constant dense<9.99999997E-7> : tensor<4x8xf32>
  // KEEP: weft.rms_norm
  %1 = weft.rms_norm %x, %g : tensor<4x8xf32>, tensor<8xf32>
  // CHECK-NOT: weft.layer_norm
  // CHECK-NOT: weft.rms_norm
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @loss_and_gating
func.func @loss_and_gating(%l: tensor<2x8x16xbf16>, %y: tensor<2x8xi32>, %r: tensor<16x8xf32>) -> (tensor<f32>, tensor<16x2xf32>, tensor<16x2xi32>) {
  // CHECK: weft.cast %{{.*}} : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
  // CHECK: weft.log
  // CHECK: weft.one_hot %{{.*}} : tensor<2x8xi32> -> tensor<2x8x16xf32>
  // CHECK: weft.reduce_sum %{{.*}} dims [0, 1] : tensor<2x8xf32>
  // CHECK: weft.max %{{.*}}, %{{.*}} : tensor<f32>
  %0 = weft.cross_entropy %l, %y : tensor<2x8x16xbf16>, tensor<2x8xi32>
  // CHECK: weft.exp
  // CHECK: weft.topk %{{.*}} k = 2 : tensor<16x8xf32>
  // CHECK: weft.reduce_sum %{{.*}} dims [1] : tensor<16x2xf32>
  %w, %e = weft.topk_gating %r k = 2 normalize : tensor<16x8xf32>
  // CHECK-NOT: weft.topk_gating
  return %0, %w, %e : tensor<f32>, tensor<16x2xf32>, tensor<16x2xi32>
}

// -----

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: weft.tanh
  // CHECK-NOT: weft.gelu
  %0 = weft.gelu %x : tensor<4xf32>
  // CHECK: weft.neg
  // CHECK: weft.exp
  // CHECK-NOT: weft.silu
  %1 = weft.silu %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The pass runs from a pipeline string and dumps IR after itself.
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(weft-decompose{ops=weft.silu})' --mlir-print-ir-after-all 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: IR Dump After Decompose (weft-decompose)
// DUMP-LABEL: func.func @pipeline
// DUMP-NOT: weft.silu
// DUMP: weft.gelu
func.func @pipeline(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = weft.silu %x : tensor<4xf32>
  %1 = weft.gelu %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

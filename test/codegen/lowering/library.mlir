// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA

// Every attribute is spelled in sched, defaults included: the runtime has
// none of its own.
// CHECK-LABEL: sched.program @language_model
// CHECK: sched.embedding %{{.*}}, %{{.*}}, %{{.*}} {vocab_axes = []}
// CHECK: sched.rope %{{.*}}, %{{.*}} {inverse = false, position_offset = 0 : i64, theta = 1.000000e+04 : f64}
// CHECK: sched.dropout %{{.*}}, %{{.*}} {rate = 1.000000e-01 : f64, seed = 3 : i64}
// CHECK: sched.softmax %{{.*}}, %{{.*}} {dim = 2 : i64}
// CHECK: sched.reduce mean %{{.*}} -> %{{.*}} dims [0, 1] : <2x8x64xf32> -> <64xf32>
// CHECK: sched.cross_entropy %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -100 : i64, vocab_axes = []} : !sched.buffer<2x8x64xf32>, !sched.buffer<2x8xi32>, !sched.buffer<f32>
// CHECK: sched.cross_entropy_grad
// CHECK: sched.embedding_grad %{{.*}}, %{{.*}}, %{{.*}} {vocab_axes = []} : !sched.buffer<2x8xi32>, !sched.buffer<2x8x64xf32>, !sched.buffer<256x64xf32>
// CHECK: sched.rms_norm_grad {{.*}} {epsilon = 9.9999999999999995E-7 : f64}
func.func @language_model(%table: tensor<256x64xf32>, %ids: tensor<2x8xi32>, %w: tensor<64xf32>) -> (tensor<f32>, tensor<256x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) {
  %h = weft.embedding %table, %ids : tensor<256x64xf32>, tensor<2x8xi32>
  %h4 = weft.reshape %h : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %r4 = weft.rope %h4 : tensor<2x8x4x16xf32>
  %r = weft.reshape %r4 : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %d = weft.dropout %r {rate = 0.1 : f64, seed = 3 : i64} : tensor<2x8x64xf32>
  %s = weft.softmax %d dim 2 : tensor<2x8x64xf32>
  %m = weft.reduce_mean %s dims [0, 1] : tensor<2x8x64xf32>
  %loss = weft.cross_entropy %s, %ids : tensor<2x8x64xf32>, tensor<2x8xi32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %dl = weft.cross_entropy_grad %s, %ids, %one : tensor<2x8x64xf32>, tensor<2x8xi32>
  %dt = weft.embedding_grad %ids, %dl : tensor<2x8xi32>, tensor<2x8x64xf32> -> tensor<256x64xf32>
  %dx, %dw = weft.rms_norm_grad %h, %w, %dl : tensor<2x8x64xf32>, tensor<64xf32>
  return %loss, %dt, %m, %dx : tensor<f32>, tensor<256x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>
}

// -----

// bf16 logits: the CPU's cross-entropy reads an f32 copy; the GPU's reads
// bf16 as stored. A bf16 reduction reads bf16 on the GPU too, and writes
// f32 it then rounds.
// CHECK-LABEL: sched.program @narrow
// CHECK: sched.copy %{{.*}} -> %[[L:.*]] sizes [4096] {{.*}} : <2x8x256xbf16> -> <2x8x256xf32>
// CHECK: sched.cross_entropy %[[L]]
// CUDA-LABEL: sched.program @narrow
// CUDA-NOT: sched.copy
// CUDA: sched.cross_entropy %{{.*}}, %{{.*}}, %{{.*}} {{.*}} : !sched.buffer<2x8x256xbf16>
// CUDA-NOT: sched.copy
// CUDA: sched.reduce sum %{{.*}} -> %[[W:[^ ]*]] scratch(%{{.*}} : !sched.buffer<32xf32>) dims [2] : <2x8x256xbf16> -> <2x8xf32>
// CUDA-NEXT: sched.copy %[[W]] -> %{{.*}} : <2x8xf32> -> <2x8xbf16>
func.func @narrow(%l: tensor<2x8x256xbf16>, %y: tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xbf16>) {
  %loss = weft.cross_entropy %l, %y : tensor<2x8x256xbf16>, tensor<2x8xi32>
  %s = weft.reduce_sum %l dims [2] : tensor<2x8x256xbf16>
  return %loss, %s : tensor<f32>, tensor<2x8xbf16>
}

// -----

// MoE routing, one instruction per op with its sizes spelled: a dropless
// route says capacity 0.
// CHECK-LABEL: sched.program @experts
// CHECK: sched.topk_gating %{{.*}}, %{{.*}}, %{{.*}} {k = 2 : i64, normalize = false}
// CHECK: sched.expert_route %{{.*}}, %{{.*}}, %{{.*}} {capacity = 4 : i64, token_axes = []} : !sched.buffer<16x2xi32>, !sched.buffer<16x2xi32>, !sched.buffer<8xi32>
// CHECK: sched.expert_route {{.*}} {capacity = 0 : i64, token_axes = []}
// CHECK: sched.expert_dispatch %{{.*}}, %{{.*}}, %{{.*}} : !sched.buffer<16x64xf32>, !sched.buffer<16x2xi32>, !sched.buffer<32x64xf32>
// CHECK: sched.grouped_matmul {{.*}} {transpose_rhs = true} : !sched.buffer<32x64xf32>, !sched.buffer<8x16x64xf32>, !sched.buffer<8xi32>, !sched.buffer<32x16xf32>
// CHECK: sched.grouped_matmul_wgrad {{.*}} : !sched.buffer<32x16xf32>, !sched.buffer<32x64xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16x64xf32>
// CHECK: sched.expert_combine
// CHECK: sched.expert_gather
// CHECK: sched.expert_scatter
// CHECK: sched.one_hot
// CHECK: sched.topk %{{.*}}, %{{.*}}, %{{.*}} {k = 3 : i64}
func.func @experts(%x: tensor<16x64xf32>, %logits: tensor<16x8xf32>, %w: tensor<8x16x64xf32>) -> (tensor<16x64xf32>, tensor<32x64xf32>, tensor<16x8xf32>, tensor<16x3xf32>, tensor<8x16x64xf32>, tensor<16x2xi32>) {
  %g, %e = weft.topk_gating %logits k = 2 : tensor<16x8xf32>
  %pos, %counts = weft.expert_route %e experts = 8 capacity = 4 : tensor<16x2xi32>
  %pos2, %counts2 = weft.expert_route %e experts = 8 : tensor<16x2xi32>
  %rows = weft.expert_dispatch %x, %pos rows = 32 : tensor<16x64xf32>, tensor<16x2xi32>
  %h = weft.grouped_matmul %rows, %w, %counts transpose_rhs : tensor<32x64xf32>, tensor<8x16x64xf32>, tensor<8xi32>
  %dw = weft.grouped_matmul_wgrad %h, %rows, %counts experts = 8 : tensor<32x16xf32>, tensor<32x64xf32>, tensor<8xi32>
  %y = weft.expert_combine %rows, %g, %pos : tensor<32x64xf32>, tensor<16x2xf32>, tensor<16x2xi32>
  %p = weft.expert_gather %rows, %pos : tensor<32x64xf32>, tensor<16x2xi32>
  %back = weft.expert_scatter %p, %pos rows = 32 : tensor<16x2x64xf32>, tensor<16x2xi32>
  %oh = weft.one_hot %e : tensor<16x2xi32> -> tensor<16x2x8xf32>
  %f = weft.reduce_sum %oh dims [1] : tensor<16x2x8xf32>
  %tv, %ti = weft.topk %logits k = 3 : tensor<16x8xf32>
  return %y, %back, %f, %tv, %dw, %pos2 : tensor<16x64xf32>, tensor<32x64xf32>, tensor<16x8xf32>, tensor<16x3xf32>, tensor<8x16x64xf32>, tensor<16x2xi32>
}

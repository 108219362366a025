// RUN: weft-opt %s -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-lower-to-sched{target=cuda},sched.program(weft-sched-plan-memory))' | FileCheck %s --check-prefix=PLAN

// On the GPU, reductions, norm gradients and cross-entropy are several
// kernels that pass intermediates through a scratch operand of
// the size dialects/sched/IR/ScratchLayout.h states, which the lowering
// allocates (N f32 for N * 4 bytes) and the memory plan places. The CPU's
// kernels need none.
// CHECK-LABEL: sched.program @scratch
// CHECK-NOT: scratch(

// A sum of 16 rows of 64: f64 partials of 64 outputs in one chunk, 512
// bytes.
// CUDA-LABEL: sched.program @scratch
// CUDA: %[[R:.*]] = sched.alloc : <128xf32>
// CUDA-NEXT: sched.reduce sum %{{.*}} -> %{{.*}} scratch(%[[R]] : !sched.buffer<128xf32>) dims [0] :
// Norm gradients over 16 rows of 64: f64 row statistics (256 bytes,
// aligned) and f64 column partials of two vectors of 64 (1024 bytes).
// CUDA: %[[N:.*]] = sched.alloc : <320xf32>
// CUDA-NEXT: sched.layer_norm_grad {{.*}} scratch(%[[N]] : !sched.buffer<320xf32>) {epsilon
// CUDA: %[[M:.*]] = sched.alloc : <320xf32>
// CUDA-NEXT: sched.rms_norm_grad {{.*}} scratch(%[[M]] : !sched.buffer<320xf32>) {epsilon
// Cross-entropy over 16 positions: f32 statistics [3, 16] (192 bytes,
// aligned to 256) and the f64 count: 264 bytes.
// CUDA: %[[C:.*]] = sched.alloc : <66xf32>
// CUDA-NEXT: sched.cross_entropy {{.*}} scratch(%[[C]] : !sched.buffer<66xf32>) {ignore_index
// CUDA: %[[G:.*]] = sched.alloc : <66xf32>
// CUDA-NEXT: sched.cross_entropy_grad {{.*}} scratch(%[[G]] : !sched.buffer<66xf32>) {ignore_index

// Planned, the scratch is an arena buffer like any other, live for its
// instruction.
// PLAN: %[[R:.*]] = sched.alloc offset({{[0-9]+}}) live([[I:[0-9]+]], [[I]]) : <128xf32>
// PLAN-NEXT: sched.reduce sum %{{.*}} -> %{{.*}} scratch(%[[R]] : !sched.buffer<128xf32>)
func.func @scratch(%x: tensor<16x64xf32>, %w: tensor<64xf32>, %ids: tensor<16xi32>, %logits: tensor<16x8xf32>) -> (tensor<64xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<f32>, tensor<16x8xf32>) {
  %s = weft.reduce_sum %x dims [0] : tensor<16x64xf32>
  %dx, %dw, %db = weft.layer_norm_grad %x, %w, %x : tensor<16x64xf32>, tensor<64xf32>
  %rx, %rw = weft.rms_norm_grad %x, %w, %x : tensor<16x64xf32>, tensor<64xf32>
  %loss = weft.cross_entropy %logits, %ids : tensor<16x8xf32>, tensor<16xi32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %dl = weft.cross_entropy_grad %logits, %ids, %one : tensor<16x8xf32>, tensor<16xi32>
  return %s, %dx, %dw, %rx, %loss, %dl : tensor<64xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<f32>, tensor<16x8xf32>
}

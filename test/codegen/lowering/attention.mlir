// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda attention-scratch-mb=0' | FileCheck %s --check-prefix=FLASH

// The compiler picks the algorithm: the CPU runs row by row (flash, no
// scratch); the GPU materialises [B, Hq, S, T] f32 scores (2·4·8·8 = 512)
// when they fit the budget, and twice that for the backward.
// CHECK-LABEL: sched.program @attend
// CHECK: sched.attention {{.*}} scale 2.500000e-01 causal algorithm flash :
// CHECK: sched.attention_grad {{.*}} scale 2.500000e-01 causal algorithm flash :
// CUDA: %[[S:.*]] = sched.alloc : <512xf32>
// CUDA-NEXT: sched.attention {{.*}} scratch(%[[S]] : !sched.buffer<512xf32>) scale 2.500000e-01 causal algorithm gemm_softmax :
// CUDA: %[[S2:.*]] = sched.alloc : <1024xf32>
// CUDA-NEXT: sched.attention_grad {{.*}} scratch(%[[S2]] : !sched.buffer<1024xf32>) {{.*}} algorithm gemm_softmax :
// FLASH: algorithm flash
// FLASH: algorithm flash
func.func @attend(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %dy: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %o, %lse = weft.attention %q, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %dq, %dk, %dv = weft.attention_grad %q, %kv, %kv, %o, %lse, %dy scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  return %dq : tensor<2x8x4x16xf32>
}

// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda attention-scratch-mb=0' | FileCheck %s --check-prefix=FLASH

// The compiler picks the algorithm: the CPU runs row by row (flash, no
// scratch); the GPU materialises the [B, Hq, S, T] = [2, 4, 8, 8] f32 scores
// and probabilities (512 · (4 + 4) bytes: 1024 f32) when they fit the budget
// and the rows align, and the backward adds the row term delta (2·4·8 f32).
// Without the budget the GPU runs FlashAttention, whose backward still
// keeps delta in scratch.
// CHECK-LABEL: sched.program @attend
// CHECK-NOT: scratch
// CHECK: sched.attention {{.*}} scale 2.500000e-01 causal algorithm flash :
// CHECK: sched.attention_grad {{.*}} scale 2.500000e-01 causal algorithm flash :
// CUDA: %[[S:.*]] = sched.alloc : <1024xf32>
// CUDA-NEXT: sched.attention {{.*}} scratch(%[[S]] : !sched.buffer<1024xf32>) scale 2.500000e-01 causal algorithm gemm_softmax :
// CUDA: %[[S2:.*]] = sched.alloc : <1088xf32>
// CUDA-NEXT: sched.attention_grad {{.*}} scratch(%[[S2]] : !sched.buffer<1088xf32>) {{.*}} algorithm gemm_softmax :
// FLASH-NOT: sched.alloc : <1024xf32>
// FLASH: sched.attention {{.*}} algorithm flash
// FLASH: %[[D:.*]] = sched.alloc : <64xf32>
// FLASH-NEXT: sched.attention_grad {{.*}} scratch(%[[D]] : !sched.buffer<64xf32>) {{.*}} algorithm flash
func.func @attend(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %dy: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %o, %lse = weft.attention %q, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %dq, %dk, %dv = weft.attention_grad %q, %kv, %kv, %o, %lse, %dy scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  return %dq : tensor<2x8x4x16xf32>
}

// -----

// Rows of S = 7 bf16 elements do not align for cuBLASLt: flash on the GPU.
// CUDA-LABEL: sched.program @unaligned
// CUDA: sched.attention {{.*}} algorithm flash
func.func @unaligned(%q: tensor<1x7x2x16xbf16>) -> tensor<1x7x2x16xbf16> {
  %o, %lse = weft.attention %q, %q, %q scale = 0.25 : tensor<1x7x2x16xbf16>, tensor<1x7x2x16xbf16>, tensor<1x7x2x16xbf16>
  return %o : tensor<1x7x2x16xbf16>
}

// -----

// An entropy of an attention's probabilities (the health probe) is written
// by that attention's own instruction, and a second such entropy is the same
// buffer; one that reads another scale (or another lse, or operands placed
// apart) is an attention of its own with the keys as values, its output and
// lse thrown away.
// CHECK-LABEL: sched.program @entropy
// CHECK: %[[O:.*]] = sched.alloc : <2x8x4x16xf32>
// CHECK-NEXT: %[[L:.*]] = sched.alloc : <2x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = sched.alloc : <2x4x8xf32>
// CHECK-NEXT: sched.attention %arg0, %arg1, %arg1 -> %[[O]], %[[L]] entropy(%[[H]] : !sched.buffer<2x4x8xf32>) scale 2.500000e-01 causal algorithm flash
// CHECK-NEXT: sched.alloc : <2x8x4x16xf32>
// CHECK-NEXT: sched.alloc : <2x4x8xf32>
// CHECK-NEXT: %[[H2:.*]] = sched.alloc : <2x4x8xf32>
// CHECK-NEXT: sched.attention %arg0, %arg1, %arg1 -> %{{.*}}, %{{.*}} entropy(%[[H2]] : !sched.buffer<2x4x8xf32>) scale 5.000000e-01 causal algorithm flash
// CHECK-NOT: sched.attention
// CHECK: sched.return ["result0", "result1", "result2", "result3"] %[[O]], %[[H]], %[[H2]], %[[H]]
// CUDA-LABEL: sched.program @entropy
// CUDA: sched.attention {{.*}} entropy({{.*}}) scratch({{.*}}) scale 2.500000e-01 causal algorithm gemm_softmax
// CUDA: sched.attention {{.*}} entropy({{.*}}) scratch({{.*}}) scale 5.000000e-01 causal algorithm gemm_softmax
// FLASH-LABEL: sched.program @entropy
// FLASH: sched.attention {{.*}} entropy({{.*}}) scale 2.500000e-01 causal algorithm flash
func.func @entropy(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %o, %lse = weft.attention %q, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %h = weft.attention_entropy %q, %kv, %lse scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
  %h2 = weft.attention_entropy %q, %kv, %lse scale = 0.5 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
  %h3 = weft.attention_entropy %q, %kv, %lse scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
  return %o, %h, %h2, %h3 : tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

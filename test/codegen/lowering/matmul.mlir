// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA

// A batch by one weight is one GEMM of B·M rows.
// CHECK-LABEL: sched.program @linear
// CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} mnk [16, 256, 64] batch 1 ld [64, 64, 256] strides [0, 0, 0] epilogue none transpose_b : <2x8x64xf32>, <256x64xf32> -> <2x8x256xf32>
func.func @linear(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>) -> tensor<2x8x256xf32> {
  %y = weft.matmul %x, %w transpose_rhs : tensor<2x8x64xf32>, tensor<256x64xf32>
  return %y : tensor<2x8x256xf32>
}

// -----

// Batched by batched: batch strides walk the batches; A transposed is
// stored [K, M], so its leading dimension is M.
// CHECK-LABEL: sched.program @batched
// CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} mnk [5, 6, 4] batch 3 ld [5, 4, 6] strides [20, 24, 30] epilogue none transpose_a transpose_b
func.func @batched(%a: tensor<3x4x5xf32>, %b: tensor<3x6x4xf32>) -> tensor<3x5x6xf32> {
  %y = weft.matmul %a, %b transpose_lhs transpose_rhs : tensor<3x4x5xf32>, tensor<3x6x4xf32>
  return %y : tensor<3x5x6xf32>
}

// -----

// Epilogues keep their operands: bias_gelu writes the pre-GELU sum into aux,
// dgelu reads it back.
// CHECK-LABEL: sched.program @epilogues
// CHECK: %[[AUX:.*]] = sched.alloc : <2x8x256xf32>
// CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} bias(%{{.*}} : !sched.buffer<256xf32>) aux(%[[AUX]] : !sched.buffer<2x8x256xf32>) mnk [16, 256, 64] {{.*}} epilogue bias_gelu :
// CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} aux(%[[AUX]] : !sched.buffer<2x8x256xf32>) mnk [16, 256, 64] {{.*}} epilogue dgelu :
func.func @epilogues(%x: tensor<2x8x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>) -> tensor<2x8x256xf32> {
  %y, %h = weft.matmul_epilogue bias_gelu %x, %w bias %b : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>)
  %d = weft.matmul_epilogue dgelu %x, %w preactivation %h : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<2x8x256xf32>) -> tensor<2x8x256xf32>
  return %d : tensor<2x8x256xf32>
}

// -----

// bf16: the CPU multiplies f32 copies and rounds the product back; the GPU
// hands cuBLASLt the bf16 operands as stored.
// CHECK-LABEL: sched.program @narrow
// CHECK: ^bb0(%[[A:.*]]: !sched.buffer<8x64xbf16>, %[[W:.*]]: !sched.buffer<64x32xbf16>):
// CHECK: %[[WA:.*]] = sched.alloc : <8x64xf32>
// CHECK-NEXT: sched.copy %[[A]] -> %[[WA]] sizes [512]
// CHECK: %[[WW:.*]] = sched.alloc : <64x32xf32>
// CHECK-NEXT: sched.copy %[[W]] -> %[[WW]] sizes [2048]
// CHECK: %[[Y:.*]] = sched.alloc : <8x32xbf16>
// CHECK-NEXT: %[[WY:.*]] = sched.alloc : <8x32xf32>
// CHECK-NEXT: sched.gemm %[[WA]], %[[WW]] -> %[[WY]] {{.*}} : <8x64xf32>, <64x32xf32> -> <8x32xf32>
// CHECK-NEXT: sched.copy %[[WY]] -> %[[Y]] sizes [256] src [0, 1] dst [0, 1] : <8x32xf32> -> <8x32xbf16>
// CHECK: sched.return ["result0"] %[[Y]]
// CUDA-LABEL: sched.program @narrow align(256)
// CUDA-NOT: sched.copy
// CUDA: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} {{.*}} : <8x64xbf16>, <64x32xbf16> -> <8x32xbf16>
// CUDA-NOT: sched.copy
func.func @narrow(%a: tensor<8x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<8x32xbf16> {
  %y = weft.matmul %a, %w : tensor<8x64xbf16>, tensor<64x32xbf16>
  return %y : tensor<8x32xbf16>
}

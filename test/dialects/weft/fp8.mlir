// RUN: weft-opt %s | FileCheck %s

// The FP8 quantization ops parse and print back; the block maxima's shape
// says how a tensor is cut into blocks.
// CHECK-LABEL: func.func @quantize
func.func @quantize(%x: tensor<8x256xf32>, %w: tensor<256x128xf32>)
    -> (tensor<8x256xf32>, tensor<256x128xf32>, tensor<8x256xf32>) {
  // CHECK: %[[XA:.*]] = weft.fp8_amax %{{.*}} : tensor<8x256xf32> -> tensor<8x2xf32>
  %xa = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<8x2xf32>
  // CHECK: weft.fp8_quantize %{{.*}}, %[[XA]] {format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
  %xq = weft.fp8_quantize %x, %xa {format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
  %wa = weft.fp8_amax %w : tensor<256x128xf32> -> tensor<8x128xf32>
  // CHECK: weft.fp8_quantize %{{.*}}, %{{.*}} {format = f8E4M3FN, pow2_scales} : tensor<256x128xf32>, tensor<8x128xf32>
  %wq = weft.fp8_quantize %w, %wa {format = f8E4M3FN, pow2_scales} : tensor<256x128xf32>, tensor<8x128xf32>
  // CHECK: weft.fp8_quantize_grad %{{.*}} {block = array<i64: 8, 256>, format = f8E5M2} : tensor<8x256xf32>
  %g = weft.fp8_quantize_grad %x {block = array<i64: 8, 256>, format = f8E5M2} : tensor<8x256xf32>
  // A backward GEMM's blocks: x by columns for its weight gradient.
  // CHECK: weft.fp8_quantize %{{.*}}, %[[XA]] {backward_block = array<i64: 8, 1>, format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
  %xb = weft.fp8_quantize %x, %xa {backward_block = array<i64: 8, 1>, format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
  // CHECK: weft.fp8_quantize_grad %{{.*}} {backward_block = array<i64: 8, 1>, block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<8x256xf32>
  %gb = weft.fp8_quantize_grad %x {backward_block = array<i64: 8, 1>, block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<8x256xf32>
  return %xq, %wq, %g : tensor<8x256xf32>, tensor<256x128xf32>, tensor<8x256xf32>
}

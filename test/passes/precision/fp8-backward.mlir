// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise},weft-autodiff)' | FileCheck %s --check-prefix=ROW
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=blockwise},weft-autodiff)' | FileCheck %s --check-prefix=BLOCK
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=mxfp8},weft-autodiff)' | FileCheck %s --check-prefix=MX
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise},weft-autodiff)' | FileCheck %s --check-prefix=TENSOR
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2 fp8=rowwise fuse-and-plan=false keep-gradients=true})' | FileCheck %s --check-prefix=PLACED

// Every FP8 GEMM of the step, backward ones included, has its scales
// constant along its contraction, as a GPU's scaled GEMM needs: the input
// gradient reads a row-wise weight quantized again along its output
// features, and the weight gradient, which sums over the tokens, reads the
// activation and the output gradient quantized again along the tokens.
// A SwiGLU MLP over 2 sequences of 128 tokens (the head stays, keep=head).
func.func @forward(%x: tensor<2x128x128xf32> {weft.input = "x"},
                   %labels: tensor<2x128xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %gate = weft.param "l0.gate" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<256x128xf32>
  %up = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<256x128xf32>
  %down = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<128x256xf32>
  %g = weft.matmul %x, %gate transpose_rhs : tensor<2x128x128xf32>, tensor<256x128xf32>
  %u = weft.matmul %x, %up transpose_rhs : tensor<2x128x128xf32>, tensor<256x128xf32>
  %s = weft.silu %g : tensor<2x128x256xf32>
  %h = weft.mul %s, %u : tensor<2x128x256xf32>
  %d = weft.matmul %h, %down transpose_rhs : tensor<2x128x256xf32>, tensor<128x256xf32>
  %r = weft.add %x, %d : tensor<2x128x128xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<64x128xf32>
  %logits = weft.matmul %r, %head transpose_rhs : tensor<2x128x128xf32>, tensor<64x128xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<2x128x64xf32>, tensor<2x128xi32>
  return %loss : tensor<f32>
}

// Row-wise: x by rows in the forward, by columns over all 256 tokens for
// its weight gradient; the down projection's weight [128, 256] by rows
// (output features) forward and by columns (input features) for the input
// gradient; the output gradient by rows for the input gradient and by
// columns for the weight gradient. gate's and up's weight gradients share
// one re-quantization of x.
// ROW-LABEL: func.func @train_step
// ROW: %[[DW:.*]] = weft.param "l0.down"
// ROW: weft.fp8_quantize %arg0, %{{.*}} {backward_block = array<i64: 2, 128, 1>, format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<2x128x1xf32>
// ROW: %[[H:.*]] = weft.mul
// ROW: %[[DWA:.*]] = weft.fp8_amax %[[DW]] : tensor<128x256xf32> -> tensor<128x1xf32>
// ROW: weft.fp8_quantize %[[DW]], %[[DWA]] {backward_block = array<i64: 128, 1>, format = f8E4M3FN}
// ROW: weft.fp8_quantize_grad %{{.*}} {backward_block = array<i64: 2, 128, 1>, block = array<i64: 1, 1, 128>, format = f8E4M3FN} : tensor<2x128x128xf32>
// ROW: weft.cross_entropy_grad
// The down projection's backward: dY by rows (the input gradient) ...
// ROW: %[[DYR:.*]] = weft.fp8_quantize %[[DY:.*]], %{{.*}} {backward_block = array<i64: 2, 128, 1>, format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<2x128x1xf32>
// ... by columns (the weight gradient) ...
// ROW-NEXT: %[[DYCA:.*]] = weft.fp8_amax %[[DY]] : tensor<2x128x128xf32> -> tensor<1x1x128xf32>
// ROW-NEXT: %[[DYC:.*]] = weft.fp8_quantize %[[DY]], %[[DYCA]] {format = f8E4M3FN, weft.fp8_backward}
// ... the weight by input features ...
// ROW-NEXT: %[[DWCA:.*]] = weft.fp8_amax %[[DW]] : tensor<128x256xf32> -> tensor<1x256xf32>
// ROW-NEXT: %[[DWC:.*]] = weft.fp8_quantize %[[DW]], %[[DWCA]] {format = f8E4M3FN, weft.fp8_backward}
// ... and h by columns.
// ROW-NEXT: %[[HCA:.*]] = weft.fp8_amax %[[H]] : tensor<2x128x256xf32> -> tensor<1x1x256xf32>
// ROW-NEXT: %[[HC:.*]] = weft.fp8_quantize %[[H]], %[[HCA]] {format = f8E4M3FN, weft.fp8_backward}
// ROW-NEXT: weft.matmul %[[DYR]], %[[DWC]] : tensor<2x128x128xf32>, tensor<128x256xf32>
// ROW-NEXT: %[[HC2:.*]] = weft.reshape %[[HC]] : tensor<2x128x256xf32> -> tensor<256x256xf32>
// ROW-NEXT: %[[DYC2:.*]] = weft.reshape %[[DYC]] : tensor<2x128x128xf32> -> tensor<256x128xf32>
// ROW-NEXT: weft.matmul %[[DYC2]], %[[HC2]] transpose_lhs : tensor<256x128xf32>, tensor<256x256xf32>
// One re-quantization of x by columns for both weight gradients.
// ROW: %[[XCA:.*]] = weft.fp8_amax %arg0 : tensor<2x128x128xf32> -> tensor<1x1x128xf32>
// ROW-NEXT: %[[XC:.*]] = weft.fp8_quantize %arg0, %[[XCA]] {format = f8E4M3FN, weft.fp8_backward}
// ROW-NEXT: weft.reshape %[[XC]]
// ROW-NOT: weft.fp8_amax %arg0
// ROW: weft.reshape %[[XC]]
// ROW-NOT: weft.fp8_amax %arg0
// ROW: return

// Blockwise: 128 x 128 weight blocks serve both GEMMs that read them; the
// weight gradient reads 128 x 1 tiles (128 tokens of one sequence) of x,
// h and the output gradient (DeepSeek-V3).
// BLOCK-LABEL: func.func @train_step
// BLOCK: weft.fp8_quantize %arg0, %{{.*}} {backward_block = array<i64: 1, 128, 1>, format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<2x128x1xf32>
// BLOCK: %[[DWA:.*]] = weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x2xf32>
// BLOCK-NEXT: %[[DWQ:.*]] = weft.fp8_quantize %{{.*}}, %[[DWA]] {format = f8E4M3FN} : tensor<128x256xf32>, tensor<1x2xf32>
// BLOCK: weft.cross_entropy_grad
// BLOCK: %[[DYR:.*]] = weft.fp8_quantize %{{.*}}, %{{.*}} {backward_block = array<i64: 1, 128, 1>, format = f8E4M3FN} : tensor<2x128x128xf32>, tensor<2x128x1xf32>
// BLOCK-NEXT: weft.fp8_amax %{{.*}} : tensor<2x128x128xf32> -> tensor<2x1x128xf32>
// BLOCK-NEXT: weft.fp8_quantize {{.*}}weft.fp8_backward
// BLOCK-NEXT: weft.fp8_amax %{{.*}} : tensor<2x128x256xf32> -> tensor<2x1x256xf32>
// BLOCK-NEXT: weft.fp8_quantize {{.*}}weft.fp8_backward
// BLOCK-NEXT: weft.matmul %[[DYR]], %[[DWQ]] : tensor<2x128x128xf32>, tensor<128x256xf32>
// BLOCK-NOT: weft.fp8_amax %{{.*}} : tensor<128x256xf32>

// MXFP8: 32-element blocks with power-of-two scales both ways: the weight
// [128, 256] by 32 input features forward and 32 output features for the
// input gradient; the weight gradient's operands by 32 tokens.
// MX-LABEL: func.func @train_step
// MX: weft.cross_entropy_grad
// MX: weft.fp8_amax %{{.*}} : tensor<2x128x128xf32> -> tensor<2x4x128xf32>
// MX-NEXT: weft.fp8_quantize {{.*}}pow2_scales, weft.fp8_backward
// MX-NEXT: weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<4x256xf32>
// MX-NEXT: weft.fp8_quantize {{.*}}pow2_scales, weft.fp8_backward

// One scale per tensor is constant along anything: nothing is quantized
// again.
// TENSOR-LABEL: func.func @train_step
// TENSOR-NOT: backward_block
// TENSOR-NOT: weft.fp8_backward
// TENSOR: return

// On dp=2 each rank holds one sequence: a block over all tokens spans the
// ranks, so its maximum is max-reduced over dp (the gradients' tiles of a
// row-wise recipe); the weight's blocks are whole on each rank.
// PLACED-LABEL: func.func @train_step
// PLACED: weft.fp8_quantize %arg0, %{{.*}} {backward_block = array<i64: 1, 128, 1>, format = f8E4M3FN, weft.amax_mesh = @mesh, weft.backward_amax_axes = ["dp"]} : tensor<1x128x128xf32>, tensor<1x128x1xf32>
// PLACED: weft.fp8_quantize %{{.*}}, %{{.*}} {backward_block = array<i64: 256, 1>, format = f8E4M3FN} : tensor<256x128xf32>, tensor<256x1xf32>
// PLACED: weft.cross_entropy_grad
// PLACED: %[[A:.*]] = weft.fp8_amax %{{.*}} : tensor<1x128x128xf32> -> tensor<1x1x128xf32>
// PLACED-NEXT: %[[M:.*]] = weft.all_reduce max %[[A]] over @mesh ["dp"] : tensor<1x1x128xf32>
// PLACED-NEXT: weft.fp8_quantize %{{.*}}, %[[M]] {format = f8E4M3FN, weft.fp8_backward} : tensor<1x128x128xf32>, tensor<1x1x128xf32>

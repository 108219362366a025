// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise keep=none},weft-autodiff)' | FileCheck %s --check-prefix=TENSOR
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none},weft-autodiff)' | FileCheck %s --check-prefix=ROW

// A bf16 model's FP8 GEMM quantizes its operands and output gradient as
// stored: the maxima read bf16, the quantize-dequantize yields bf16 (what
// the GEMM reads), and no cast widens anything to f32 (a GPU reads the
// bf16 tensor itself; before, each quantization was wrapped in a widening
// and a narrowing cast, whose copies cost more than FP8 saved). The
// weight gradient reads x (an input: no gradient of its own) quantized
// again from the bf16 input itself under row-wise.

func.func @forward(%x: tensor<16x128xbf16> {weft.input = "x"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 2.0e-02) : tensor<128x256xf32>
  %wb = weft.cast %w : tensor<128x256xf32> to tensor<128x256xbf16>
  %y = weft.matmul %x, %wb : tensor<16x128xbf16>, tensor<128x256xbf16>
  %s = weft.reduce_mean %y dims [0, 1] : tensor<16x256xbf16>
  %l = weft.cast %s : tensor<bf16> to tensor<f32>
  return %l : tensor<f32>
}

// TENSOR-LABEL: func.func @train_step
// TENSOR: %[[W:.*]] = weft.cast %{{.*}} : tensor<128x256xf32> to tensor<128x256xbf16>
// TENSOR-NEXT: %[[XA:.*]] = weft.fp8_amax %arg0 : tensor<16x128xbf16> -> tensor<1x1xf32>
// TENSOR-NEXT: %[[XQ:.*]] = weft.fp8_quantize %arg0, %[[XA]] {format = f8E4M3FN} : tensor<16x128xbf16>, tensor<1x1xf32>
// TENSOR-NEXT: %[[WA:.*]] = weft.fp8_amax %[[W]] : tensor<128x256xbf16> -> tensor<1x1xf32>
// TENSOR-NEXT: %[[WQ:.*]] = weft.fp8_quantize %[[W]], %[[WA]] {format = f8E4M3FN} : tensor<128x256xbf16>, tensor<1x1xf32>
// TENSOR-NEXT: %[[Y:.*]] = weft.matmul %[[XQ]], %[[WQ]] : tensor<16x128xbf16>, tensor<128x256xbf16>
// TENSOR-NEXT: weft.fp8_quantize_grad %[[Y]] {block = array<i64: 16, 256>, format = f8E5M2} : tensor<16x256xbf16>
// TENSOR: %[[G:.*]] = weft.broadcast %{{.*}} dims [] : tensor<bf16> -> tensor<16x256xbf16>
// TENSOR-NEXT: %[[GA:.*]] = weft.fp8_amax %[[G]] : tensor<16x256xbf16> -> tensor<1x1xf32>
// TENSOR-NEXT: %[[GQ:.*]] = weft.fp8_quantize %[[G]], %[[GA]] {format = f8E5M2} : tensor<16x256xbf16>, tensor<1x1xf32>
// TENSOR-NEXT: %[[DW:.*]] = weft.matmul %[[XQ]], %[[GQ]] transpose_lhs : tensor<16x128xbf16>, tensor<16x256xbf16>
// TENSOR-NEXT: weft.cast %[[DW]] : tensor<128x256xbf16> to tensor<128x256xf32>
// TENSOR-NOT: weft.cast

// ROW-LABEL: func.func @train_step
// ROW-NOT: to tensor<16x{{128|256}}xf32>
// ROW: weft.fp8_amax %arg0 : tensor<16x128xbf16> -> tensor<16x1xf32>
// ROW: %[[G:.*]] = weft.broadcast %{{.*}} dims [] : tensor<bf16> -> tensor<16x256xbf16>
// ROW-NEXT: %[[GA:.*]] = weft.fp8_amax %[[G]] : tensor<16x256xbf16> -> tensor<1x256xf32>
// ROW-NEXT: %[[GQ:.*]] = weft.fp8_quantize %[[G]], %[[GA]] {format = f8E4M3FN, weft.fp8_backward} : tensor<16x256xbf16>, tensor<1x256xf32>
// ROW-NEXT: %[[XA:.*]] = weft.fp8_amax %arg0 : tensor<16x128xbf16> -> tensor<1x128xf32>
// ROW-NEXT: %[[XQ:.*]] = weft.fp8_quantize %arg0, %[[XA]] {format = f8E4M3FN, weft.fp8_backward} : tensor<16x128xbf16>, tensor<1x128xf32>
// ROW-NEXT: weft.matmul %[[XQ]], %[[GQ]] transpose_lhs : tensor<16x128xbf16>, tensor<16x256xbf16>
// ROW-NOT: to tensor<16x{{128|256}}xf32>

// RUN: weft-opt %s -split-input-file -weft-gemm-epilogue | FileCheck %s

// An MLP's first layer: bias and GELU go into the GEMM; the GELU input
// (the add) stays visible as the aux result for the backward.
// CHECK-LABEL: func.func @bias_gelu
func.func @bias_gelu(%x: tensor<2x4x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  // CHECK-NEXT: %[[Y:.*]], %[[H:.*]] = weft.matmul_epilogue bias_gelu %arg0, %arg1 bias %arg2 : (tensor<2x4x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>)
  // CHECK-NEXT: return %[[Y]], %[[H]]
  %m = weft.matmul %x, %w : tensor<2x4x16xf32>, tensor<16x32xf32>
  %bb = weft.broadcast %b dims [2] : tensor<32xf32> -> tensor<2x4x32xf32>
  %h = weft.add %m, %bb : tensor<2x4x32xf32>
  %y = weft.gelu %h : tensor<2x4x32xf32>
  return %y, %h : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}

// -----

// The bias may be either operand of the add; with no GELU after it, the
// epilogue is the bias alone. bf16 too, and a transposed weight.
// CHECK-LABEL: func.func @bias_only
func.func @bias_only(%x: tensor<4x16xbf16>, %w: tensor<12x16xbf16>, %b: tensor<12xbf16>) -> tensor<4x12xbf16> {
  // CHECK-NEXT: %[[Y:.*]] = weft.matmul_epilogue bias %arg0, %arg1 transpose_rhs bias %arg2 : (tensor<4x16xbf16>, tensor<12x16xbf16>, tensor<12xbf16>) -> tensor<4x12xbf16>
  // CHECK-NEXT: return %[[Y]]
  %m = weft.matmul %x, %w transpose_rhs : tensor<4x16xbf16>, tensor<12x16xbf16>
  %bb = weft.broadcast %b dims [1] : tensor<12xbf16> -> tensor<4x12xbf16>
  %h = weft.add %bb, %m : tensor<4x12xbf16>
  return %h : tensor<4x12xbf16>
}

// -----

// N = 12 is no multiple of 8, so cuBLASLt could not keep the GELU input:
// the bias folds, the GELU stays an op.
// CHECK-LABEL: func.func @gelu_needs_aligned_rows
func.func @gelu_needs_aligned_rows(%x: tensor<4x16xf32>, %w: tensor<16x12xf32>, %b: tensor<12xf32>) -> tensor<4x12xf32> {
  // CHECK-NEXT: %[[H:.*]] = weft.matmul_epilogue bias
  // CHECK-NEXT: weft.gelu %[[H]]
  %m = weft.matmul %x, %w : tensor<4x16xf32>, tensor<16x12xf32>
  %bb = weft.broadcast %b dims [1] : tensor<12xf32> -> tensor<4x12xf32>
  %h = weft.add %m, %bb : tensor<4x12xf32>
  %y = weft.gelu %h : tensor<4x12xf32>
  return %y : tensor<4x12xf32>
}

// -----

// No bias: GELU with aux; the product's other reader gets the aux.
// CHECK-LABEL: func.func @gelu_no_bias
func.func @gelu_no_bias(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %[[Y:.*]], %[[H:.*]] = weft.matmul_epilogue gelu %arg0, %arg1 : (tensor<4x16xf32>, tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK-NEXT: %[[G:.*]] = weft.gelu_grad %[[H]], %arg2
  // CHECK-NEXT: return %[[Y]], %[[G]]
  %m = weft.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %y = weft.gelu %m : tensor<4x8xf32>
  %g = weft.gelu_grad %m, %dy : tensor<4x8xf32>
  return %y, %g : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The backward of the MLP's second layer: dy = dz W^T goes straight into
// gelu_grad, which becomes the GEMM's dgelu epilogue.
// CHECK-LABEL: func.func @dgelu
func.func @dgelu(%dz: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %h: tensor<2x4x32xf32>) -> tensor<2x4x32xf32> {
  // CHECK-NEXT: %[[D:.*]] = weft.matmul_epilogue dgelu %arg0, %arg1 transpose_rhs preactivation %arg2 : (tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  // CHECK-NEXT: return %[[D]]
  %dy = weft.matmul %dz, %w transpose_rhs : tensor<2x4x16xf32>, tensor<32x16xf32>
  %dh = weft.gelu_grad %h, %dy : tensor<2x4x32xf32>
  return %dh : tensor<2x4x32xf32>
}

// -----

// What stays as it is: a product read elsewhere too (the add would need
// the raw product), a gelu_grad taking the product as its x, a transposed
// lhs (a weight gradient), a batched weight, f16, a bias broadcast along
// another dimension.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: weft.matmul_epilogue
func.func @left_alone(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>,
                      %xb: tensor<2x8x8xf32>, %wb: tensor<2x8x8xf32>,
                      %xh: tensor<8x8xf16>, %wh: tensor<8x8xf16>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8x8xf32>, tensor<8x8xf16>, tensor<8x8xf32>) {
  %m0 = weft.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32>
  %bb = weft.broadcast %b dims [1] : tensor<8xf32> -> tensor<8x8xf32>
  %a0 = weft.add %m0, %bb : tensor<8x8xf32>
  %m1 = weft.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32>
  %g1 = weft.gelu_grad %m1, %x : tensor<8x8xf32>
  %m2 = weft.matmul %x, %w transpose_lhs : tensor<8x8xf32>, tensor<8x8xf32>
  %y2 = weft.gelu %m2 : tensor<8x8xf32>
  %m3 = weft.matmul %xb, %wb : tensor<2x8x8xf32>, tensor<2x8x8xf32>
  %y3 = weft.gelu %m3 : tensor<2x8x8xf32>
  %m4 = weft.matmul %xh, %wh : tensor<8x8xf16>, tensor<8x8xf16>
  %y4 = weft.gelu %m4 : tensor<8x8xf16>
  %m5 = weft.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32>
  %bc = weft.broadcast %b dims [0] : tensor<8xf32> -> tensor<8x8xf32>
  %a5 = weft.add %m5, %bc : tensor<8x8xf32>
  return %a0, %m0, %g1, %y2, %y3, %y4, %a5 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x8x8xf32>, tensor<8x8xf16>, tensor<8x8xf32>
}

// RUN: weft-opt %s -split-input-file -weft-fusion-group | FileCheck %s --check-prefix=DEFAULT
// RUN: weft-opt %s -split-input-file '-weft-fusion-group=single-ops=true' | FileCheck %s

// GPU bundles (single-ops): an elementwise op that joins no group is a group
// of one; by default it stays a plain op.
// DEFAULT-LABEL: func.func @lonely
// DEFAULT-NOT: weft.fused
// CHECK-LABEL: func.func @lonely
func.func @lonely(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m = weft.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32>
  // CHECK: %[[F:.*]] = weft.fused(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: weft.add
  // CHECK-NEXT: weft.yield
  %r = weft.add %m, %a : tensor<4x8xf32>
  // CHECK: weft.matmul %[[F]]
  %n = weft.matmul %r, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Narrow (bf16) ops become groups of one each, never joined with a
// neighbour: a group's intermediate values are f32 and would skip the
// per-op rounding to bf16.
// DEFAULT-LABEL: func.func @narrow
// DEFAULT-NOT: weft.fused
// CHECK-LABEL: func.func @narrow
func.func @narrow(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK: %[[S:.*]] = weft.fused(%{{.*}}, %{{.*}}) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: weft.add
  // CHECK-NEXT: weft.yield
  %s = weft.add %a, %b : tensor<4x8xbf16>
  // CHECK: weft.fused(%[[S]]) : (tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: weft.gelu
  // CHECK-NEXT: weft.yield
  %g = weft.gelu %s : tensor<4x8xbf16>
  return %g : tensor<4x8xbf16>
}

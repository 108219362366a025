// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s

// Meshes and shardings parse, verify and print back.

// CHECK: weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: {weft.sharding = #weft.sharding<@mesh, {{\[}}["dp"], [], []]>}
func.func @megatron_mlp(%x: tensor<8x16x64xf32> {weft.sharding = #weft.sharding<@mesh, [["dp"], [], []]>}) -> tensor<8x16x256xf32> {
  // CHECK: weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, {{\[}}[], ["tp"]]>]} : tensor<64x256xf32>
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [[], ["tp"]]>]} : tensor<64x256xf32>
  // A dimension may split over two axes, major first.
  // CHECK: weft.sharding = [#weft.sharding<@mesh, {{\[}}["dp", "tp"], [], []]>]
  %y = weft.matmul %x, %w {weft.sharding = [#weft.sharding<@mesh, [["dp", "tp"], [], []]>]} : tensor<8x16x64xf32>, tensor<64x256xf32>
  return %y : tensor<8x16x256xf32>
}

// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-sharding-propagate,weft-partition))' 2>&1 | FileCheck %s

// A value split over tp along one dimension, used where tp splits another:
// the partitioner gathers the dimension tp leaves before it splits the one
// tp takes. Splitting first would treat the two ranks' different blocks as
// copies of one value (their mean is neither block), which is what GPT-2's
// c_attn bias under sp=on once trained on.

// CHECK: warning: operand 1 dimension 2 is annotated split over [tp] but the op splits it over []; the partitioner will reshard it
// CHECK-LABEL: func.func @move
// CHECK: %[[WHOLE:.*]] = weft.all_gather %arg1 over @mesh ["tp"] dim 2 : tensor<4x4x2xf32> -> tensor<4x4x4xf32>
// CHECK: %[[HALF:.*]] = weft.mul %[[WHOLE]], %{{.*}} : tensor<4x4x4xf32>
// CHECK: %[[BLOCK:.*]] = weft.reduce_scatter %[[HALF]] over @mesh ["tp"] dim 1 : tensor<4x4x4xf32> -> tensor<4x2x4xf32>
// CHECK: weft.add %arg0, %[[BLOCK]] : tensor<4x2x4xf32>
weft.mesh @mesh axes ["tp"] sizes [2]
func.func @move(%x: tensor<4x4x4xf32> {weft.sharding = #weft.sharding<@mesh, [[], ["tp"], []]>}, %y: tensor<4x4x4xf32> {weft.sharding = #weft.sharding<@mesh, [[], [], ["tp"]]>}) -> tensor<4x4x4xf32> {
  %s = weft.add %x, %y : tensor<4x4x4xf32>
  return %s : tensor<4x4x4xf32>
}

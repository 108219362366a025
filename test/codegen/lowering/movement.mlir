// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s

// Reshapes are views (no instruction); transposes, broadcasts, slices,
// concatenation parts and casts are strided copies on the values as stored.

// CHECK-LABEL: sched.program @shapes align(64) events(0) streams ["compute"]
// CHECK-SAME: {
// CHECK-NEXT: ^bb0(%[[X:.*]]: !sched.buffer<2x3x4xf32>, %[[B:.*]]: !sched.buffer<4xf32>):
func.func @shapes(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> (tensor<4x3x2xf32>, tensor<2x3x4xf32>, tensor<2x2x4xf32>, tensor<6x4xbf16>) {
  // [2, 3, 4] transposed to [4, 3, 2]: result dim i walks input dim perm[i].
  // CHECK: %[[T:.*]] = sched.alloc : <4x3x2xf32>
  // CHECK-NEXT: sched.copy %[[X]] -> %[[T]] sizes [4, 3, 2] src [0, 1, 4, 12] dst [0, 6, 2, 1]
  %t = weft.transpose %x [2, 1, 0] : tensor<2x3x4xf32>
  // A bias broadcast over rows: stride 0 along the new dimensions.
  // CHECK: %[[BB:.*]] = sched.alloc : <2x3x4xf32>
  // CHECK-NEXT: sched.copy %[[B]] -> %[[BB]] sizes [2, 3, 4] src [0, 0, 0, 1] dst [0, 12, 4, 1]
  %bb = weft.broadcast %b dims [2] : tensor<4xf32> -> tensor<2x3x4xf32>
  // Rows 1..2 of every batch: offset 1 * 4.
  // CHECK: %[[S:.*]] = sched.alloc : <2x2x4xf32>
  // CHECK-NEXT: sched.copy %[[X]] -> %[[S]] sizes [2, 2, 4] src [4, 12, 4, 1] dst [0, 8, 4, 1]
  %s = weft.slice %x [0, 1, 0] to [2, 3, 4] : tensor<2x3x4xf32>
  // CHECK-NOT: sched.copy
  // CHECK: %[[R:.*]] = sched.view %[[X]][0] : <2x3x4xf32> to <6x4xf32>
  %r = weft.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // A cast is a converting copy of every element.
  // CHECK: %[[C:.*]] = sched.alloc : <6x4xbf16>
  // CHECK-NEXT: sched.copy %[[R]] -> %[[C]] sizes [24] src [0, 1] dst [0, 1] : <6x4xf32> -> <6x4xbf16>
  %c = weft.cast %r : tensor<6x4xf32> to tensor<6x4xbf16>
  // CHECK: sched.return ["result0", "result1", "result2", "result3"] %[[T]], %[[BB]], %[[S]], %[[C]]
  return %t, %bb, %s, %c : tensor<4x3x2xf32>, tensor<2x3x4xf32>, tensor<2x2x4xf32>, tensor<6x4xbf16>
}

// -----

// Each part of a concatenation is copied to its place: along dim 1 the
// second part starts 3 columns in.
// CHECK-LABEL: sched.program @concat
// CHECK: %[[Y:.*]] = sched.alloc : <2x5xf32>
// CHECK-NEXT: sched.copy %{{.*}} -> %[[Y]] sizes [2, 3] src [0, 3, 1] dst [0, 5, 1]
// CHECK-NEXT: sched.copy %{{.*}} -> %[[Y]] sizes [2, 2] src [0, 2, 1] dst [3, 5, 1]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x5xf32> {
  %y = weft.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x2xf32>
  return %y : tensor<2x5xf32>
}

// -----

// One rank's block of a replicated value: the source offset grows by the
// block's row per rank of the group.
weft.mesh @mesh axes ["tp"] sizes [4]
// CHECK: sched.mesh @mesh axes ["tp"] sizes [4]
// CHECK-LABEL: sched.program @block
// CHECK: sched.copy %{{.*}} -> %{{.*}} sizes [8, 4] src [0, 16, 1] dst [0, 4, 1] by_rank(@mesh ["tp"] * 4) : <8x16xf32> -> <8x4xf32>
func.func @block(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %y = weft.shard_slice %x over @mesh ["tp"] dim 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

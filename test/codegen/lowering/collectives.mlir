// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-lower-to-sched=target=cuda | FileCheck %s --check-prefix=GPU

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// A bucket of gradients is one f32 buffer: members copied in, reduced in
// place; f32 results are views of it, a bf16 one is rounded back out.
// CHECK-LABEL: sched.program @bucket
// CHECK: ^bb0(%[[A:.*]]: !sched.buffer<8xf32>, %[[B:.*]]: !sched.buffer<2x4xbf16>):
// CHECK: %[[K:.*]] = sched.alloc : <16xf32>
// CHECK-NEXT: %[[K0:.*]] = sched.view %[[K]][0] : <16xf32> to <8xf32>
// CHECK-NEXT: sched.copy %[[A]] -> %[[K0]] sizes [8]
// CHECK-NEXT: %[[K1:.*]] = sched.view %[[K]][32] : <16xf32> to <8xf32>
// CHECK-NEXT: sched.copy %[[B]] -> %[[K1]] sizes [8] src [0, 1] dst [0, 1] : <2x4xbf16> -> <8xf32>
// CHECK-NEXT: sched.collective all_reduce mean %[[K]] -> %[[K]] over @mesh ["dp"] : <16xf32> -> <16xf32>
// CHECK-NEXT: %[[R0:.*]] = sched.view %[[K]][0] : <16xf32> to <8xf32>
// CHECK-NEXT: %[[R1:.*]] = sched.view %[[K]][32] : <16xf32> to <2x4xf32>
// CHECK-NEXT: %[[OUT:.*]] = sched.alloc : <2x4xbf16>
// CHECK-NEXT: sched.copy %[[R1]] -> %[[OUT]]
// CHECK: sched.return ["result0", "result1"] %[[R0]], %[[OUT]]
func.func @bucket(%a: tensor<8xf32>, %b: tensor<2x4xbf16>) -> (tensor<8xf32>, tensor<2x4xbf16>) {
  %r:2 = weft.all_reduce mean %a, %b over @mesh ["dp"] : tensor<8xf32>, tensor<2x4xbf16>
  return %r#0, %r#1 : tensor<8xf32>, tensor<2x4xbf16>
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// Along dimension 0 the blocks are contiguous: no packing.
// CHECK-LABEL: sched.program @rows
// CHECK-NOT: sched.copy
// CHECK: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["tp"] : <8x4xf32> -> <32x4xf32>
// CHECK-NOT: sched.copy
// CHECK: sched.collective reduce_scatter sum %{{.*}} -> %{{.*}} over @mesh ["tp"] : <32x4xf32> -> <8x4xf32>
func.func @rows(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %g = weft.all_gather %x over @mesh ["tp"] dim 0 : tensor<8x4xf32> -> tensor<32x4xf32>
  %s = weft.reduce_scatter %g over @mesh ["tp"] dim 0 : tensor<32x4xf32> -> tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// An all-gather only moves: bf16 goes as stored (half f32's bytes, as
// FSDP's mixed precision gathers), on the CPU as bytes; the GPU moves
// four-byte words, so a shard of an odd count of bf16 goes through f32.
// CHECK-LABEL: sched.program @narrow
// CHECK-NOT: sched.copy
// CHECK: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["tp"] : <8x4xbf16> -> <32x4xbf16>
// CHECK: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["tp"] : <3xbf16> -> <12xbf16>
// GPU-LABEL: sched.program @narrow
// GPU: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["tp"] : <8x4xbf16> -> <32x4xbf16>
// GPU: sched.copy %{{.*}} -> %{{.*}} sizes [3] {{.*}} : <3xbf16> -> <3xf32>
// GPU: sched.collective all_gather none %{{.*}} -> %{{.*}} over @mesh ["tp"] : <3xf32> -> <12xf32>
func.func @narrow(%x: tensor<8x4xbf16>, %y: tensor<3xbf16>) -> (tensor<32x4xbf16>, tensor<12xbf16>) {
  %g = weft.all_gather %x over @mesh ["tp"] dim 0 : tensor<8x4xbf16> -> tensor<32x4xbf16>
  %h = weft.all_gather %y over @mesh ["tp"] dim 0 : tensor<3xbf16> -> tensor<12xbf16>
  return %g, %h : tensor<32x4xbf16>, tensor<12xbf16>
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// Along dimension 1 each rank's block is 2 of every row's 8 columns: the
// gathered blocks [4, 8 rows, 2] are unpacked into place, and a
// reduce-scatter packs them first.
// CHECK-LABEL: sched.program @columns
// CHECK: %[[Y:.*]] = sched.alloc : <8x8xf32>
// CHECK-NEXT: %[[G:.*]] = sched.alloc : <64xf32>
// CHECK-NEXT: sched.collective all_gather none %{{.*}} -> %[[G]] over @mesh ["tp"] : <8x2xf32> -> <64xf32>
// CHECK-NEXT: sched.copy %[[G]] -> %[[Y]] sizes [4, 8, 2] src [0, 16, 2, 1] dst [0, 2, 8, 1]
// CHECK: %[[P:.*]] = sched.alloc : <64xf32>
// CHECK-NEXT: sched.copy %[[Y]] -> %[[P]] sizes [4, 8, 2] src [0, 2, 8, 1] dst [0, 16, 2, 1]
// CHECK: sched.collective reduce_scatter sum %[[P]] -> %{{.*}} over @mesh ["tp"] : <64xf32> -> <8x2xf32>
func.func @columns(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %g = weft.all_gather %x over @mesh ["tp"] dim 1 : tensor<8x2xf32> -> tensor<8x8xf32>
  %s = weft.reduce_scatter %g over @mesh ["tp"] dim 1 : tensor<8x8xf32> -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}

// -----

weft.mesh @mesh axes ["ep"] sizes [2]

// All-to-all: blocks split along dim 0 are sent as they lie; those received
// are concatenated along dim 1.
// CHECK-LABEL: sched.program @exchange
// CHECK: %[[Y:.*]] = sched.alloc : <4x8xf32>
// CHECK-NEXT: %[[R:.*]] = sched.alloc : <32xf32>
// CHECK-NEXT: sched.collective all_to_all none %{{.*}} -> %[[R]] over @mesh ["ep"] : <8x4xf32> -> <32xf32>
// CHECK-NEXT: sched.copy %[[R]] -> %[[Y]] sizes [2, 4, 4] src [0, 16, 4, 1] dst [0, 4, 8, 1]
func.func @exchange(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %y = weft.all_to_all %x over @mesh ["ep"] split 0 concat 1 : tensor<8x4xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

weft.mesh @mesh axes ["cp"] sizes [4]

// A ring shift left to the lowering (the GPU's: one grouped exchange) moves
// bytes as stored, f32 or i32, each with its own tag.
// CHECK-LABEL: sched.program @ring
// CHECK: sched.ring_shift %{{.*}} -> %{{.*}} over @mesh "cp" offset 1 tag 1048576 : <2x8xf32> -> <2x8xf32>
// CHECK: sched.ring_shift %{{.*}} -> %{{.*}} over @mesh "cp" offset -1 tag 1048577 : <8xi32> -> <8xi32>
func.func @ring(%k: tensor<2x8xf32>, %p: tensor<8xi32>) -> (tensor<2x8xf32>, tensor<8xi32>) {
  %k1 = weft.ring_shift %k over @mesh "cp" offset 1 : tensor<2x8xf32>
  %p1 = weft.ring_shift %p over @mesh "cp" offset -1 : tensor<8xi32>
  return %k1, %p1 : tensor<2x8xf32>, tensor<8xi32>
}

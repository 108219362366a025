// RUN: weft-opt %s -split-input-file -weft-memory-plan | FileCheck %s

// Lifetimes (op positions): a [0, 3], b [1, 2], c [2, 3], d [3, 4]. Each
// buffer is 64 bytes: d reuses b's bytes, everything else is disjoint.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: weft.arena_bytes = 192 : i64
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK: weft.exp %{{.*}} {weft.offsets = array<i64: 0>}
  %a = weft.exp %x : tensor<16xf32>
  // CHECK: weft.exp %{{.*}} {weft.offsets = array<i64: 64>}
  %b = weft.exp %a : tensor<16xf32>
  // CHECK: weft.exp %{{.*}} {weft.offsets = array<i64: 128>}
  %c = weft.exp %b : tensor<16xf32>
  // CHECK: weft.add %{{.*}}, %{{.*}} {weft.offsets = array<i64: 64>}
  %d = weft.add %c, %a : tensor<16xf32>
  return %d : tensor<16xf32>
}

// -----

// Larger buffers are placed first; a reshape shares its operand's bytes and
// extends its life; params and constants are not in the arena.
// CHECK-LABEL: func.func @views
// CHECK-SAME: weft.arena_bytes = 4160 : i64
func.func @views(%x: tensor<32x32xf32>) -> tensor<f32> {
  // CHECK: weft.param "w"
  // CHECK-NOT: weft.offsets
  %w = weft.param "w" init(zeros) : tensor<32x32xf32>
  // CHECK: weft.constant
  // CHECK-NOT: weft.offsets
  %c = weft.constant dense<2.0> : tensor<16xf32>
  // CHECK: weft.add %{{.*}}, %{{.*}} {weft.offsets = array<i64: 0>}
  %s = weft.add %x, %w : tensor<32x32xf32>
  // CHECK: weft.reshape %{{.*}} {weft.offsets = array<i64: 0>}
  %r = weft.reshape %s : tensor<32x32xf32> -> tensor<1024xf32>
  // CHECK: weft.slice %{{.*}} [0] to [16] {weft.offsets = array<i64: 4096>}
  %t = weft.slice %r [0] to [16] : tensor<1024xf32>
  // CHECK: weft.mul %{{.*}}, %{{.*}} {weft.offsets = array<i64: 0>}
  %m = weft.mul %t, %c : tensor<16xf32>
  // CHECK: weft.reduce_sum %{{.*}} dims [0] {weft.offsets = array<i64: 64>}
  %l = weft.reduce_sum %m dims [0] : tensor<16xf32>
  return %l : tensor<f32>
}

// -----

// Under data parallelism a replicated parameter is read through its
// copy_to_group (the identity in the forward): a view of the parameter,
// as the sched lowering makes it, so neither it nor a reshape of it takes
// arena bytes (offset -1); only the product does.
weft.mesh @mesh axes ["dp"] sizes [2]
// CHECK-LABEL: func.func @replicated
// CHECK-SAME: weft.arena_bytes = 64 : i64
func.func @replicated(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w = weft.param "w" init(ones) : tensor<16xf32>
  // CHECK: weft.copy_to_group %{{.*}} {weft.offsets = array<i64: -1>}
  %c = weft.copy_to_group %w over @mesh ["dp"] : tensor<16xf32>
  // CHECK: weft.reshape %{{.*}} {weft.offsets = array<i64: -1>}
  %r = weft.reshape %c : tensor<16xf32> -> tensor<4x4xf32>
  // CHECK: weft.mul %{{.*}}, %{{.*}} {weft.offsets = array<i64: 0>}
  %m = weft.mul %x, %r : tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

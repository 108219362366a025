// RUN: weft-opt %s -split-input-file -weft-sched-arenas | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-sched-arenas=target=cuda | FileCheck %s --check-prefix=GPU

weft.mesh @mesh axes ["dp"] sizes [2]

// Two 1 KiB gradients all-reduced as one bucket: the sched lowering reduces
// a 2 KiB f32 buffer in place and the results are views of it, so the whole
// bucket lives until its last member is read (the exps, one kernel), beside
// their 1 KiB result: 3072 bytes. The weft values alone (two 1 KiB results,
// then one beside the output) would say 2048.
// CHECK-LABEL: func.func @bucket
// CHECK-SAME: weft.arena_bytes = 3072
// GPU-LABEL: func.func @bucket
// GPU-SAME: weft.arena_bytes = 3072
func.func @bucket(%a: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<256xf32> {
  %r:2 = weft.all_reduce mean %a, %b over @mesh ["dp"] : tensor<256xf32>, tensor<256xf32>
  %e = weft.exp %r#1 : tensor<256xf32>
  %f = weft.exp %e : tensor<256xf32>
  return %f : tensor<256xf32>
}

// -----

// A bf16 exp: on the CPU its kernel computes in f32, so the lowering
// widens the input into a 1 KiB f32 copy and writes a 1 KiB f32 result
// that is rounded into the 512-byte output; the copy and the f32 result
// are live together: 2048 bytes. The GPU's generated kernel reads and
// writes bf16: the output's 512.
// CHECK-LABEL: func.func @narrow
// CHECK-SAME: weft.arena_bytes = 2048
// GPU-LABEL: func.func @narrow
// GPU-SAME: weft.arena_bytes = 512
func.func @narrow(%a: tensor<256xbf16>) -> tensor<256xbf16> {
  %e = weft.exp %a : tensor<256xbf16>
  return %e : tensor<256xbf16>
}

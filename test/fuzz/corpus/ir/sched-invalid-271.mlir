// Batches of a GEMM write disjoint blocks of C.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<2x4x16xf32>, %b: !sched.buffer<16x16xf32>, %c: !sched.buffer<4x16xf32>):
  sched.gemm %a, %b -> %c mnk [4, 16, 16] batch 2 ld [16, 16, 16] strides [64, 0, 0] epilogue none : !sched.buffer<2x4x16xf32>, !sched.buffer<16x16xf32> -> !sched.buffer<4x16xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x8xf32>, %c: !sched.buffer<4x8xf32>, %bias: !sched.buffer<8xi32>):
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<8xi32>) mnk [4, 8, 8] batch 1 ld [8, 8, 8] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x8xf32> -> !sched.buffer<4x8xf32>
  sched.return []
}

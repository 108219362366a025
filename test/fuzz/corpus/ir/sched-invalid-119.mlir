sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf8E4M3FN>, %b: !sched.buffer<8x4xf8E4M3FN>, %c: !sched.buffer<4x4xf32>, %s: !sched.buffer<1xf32>, %t: !sched.buffer<2xf32>):
  sched.gemm %a, %b -> %c scales(%s, %t : !sched.buffer<1xf32>, !sched.buffer<2xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<8x4xf8E4M3FN> -> !sched.buffer<4x4xf32>
  sched.return []
}

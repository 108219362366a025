// batch * m * n wraps to 0 in int64: the aux size check must not.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<65536x1xf32>, %b: !sched.buffer<1x65536xf32>, %c: !sched.buffer<65536x65536xf32>, %bias: !sched.buffer<65536xf32>, %aux: !sched.buffer<0xf32>):
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<65536xf32>) aux(%aux : !sched.buffer<0xf32>) mnk [65536, 65536, 1] batch 4294967296 ld [1, 65536, 65536] strides [0, 0, 0] epilogue bias_gelu : !sched.buffer<65536x1xf32>, !sched.buffer<1x65536xf32> -> !sched.buffer<65536x65536xf32>
  sched.return []
}

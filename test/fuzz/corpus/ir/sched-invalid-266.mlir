sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x8xf32>, %k: !sched.buffer<1x4x2x8xf32>, %o: !sched.buffer<1x4x2x8xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<64xbf16>):
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<64xbf16>) scale 1.0 algorithm gemm_softmax : !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x4x2x8xf32> -> !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x2x4xf32>
  sched.return []
}

// cuBLASLt wants 16-byte rows: S = 2 bf16 elements is 4 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x8xbf16>, %k: !sched.buffer<1x8x1x8xbf16>, %o: !sched.buffer<1x2x2x8xbf16>, %lse: !sched.buffer<1x2x2xf32>, %s: !sched.buffer<1024xf32>):
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<1024xf32>) scale 0.5 algorithm gemm_softmax : !sched.buffer<1x2x2x8xbf16>, !sched.buffer<1x8x1x8xbf16>, !sched.buffer<1x8x1x8xbf16> -> !sched.buffer<1x2x2x8xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

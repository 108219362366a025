// Zero-width heads let B, S, Hq and T be large enough that the scores
// overflow int64 while every buffer stays small.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<65536x65536x65536x0xbf16>, %k: !sched.buffer<65536x65536x1x0xbf16>, %o: !sched.buffer<65536x65536x65536x0xbf16>, %lse: !sched.buffer<65536x65536x65536xf32>):
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm gemm_softmax : !sched.buffer<65536x65536x65536x0xbf16>, !sched.buffer<65536x65536x1x0xbf16>, !sched.buffer<65536x65536x1x0xbf16> -> !sched.buffer<65536x65536x65536x0xbf16>, !sched.buffer<65536x65536x65536xf32>
  sched.return []
}

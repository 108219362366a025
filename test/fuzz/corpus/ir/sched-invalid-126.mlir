sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xi32>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xi32>, !sched.buffer<1x3x1x4xi32> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

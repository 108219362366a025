// 2^60 outputs take 2^63 bytes of partials: more than int64 holds.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<1152921504606846976xf32>, %y: !sched.buffer<1152921504606846976xf32>, %s: !sched.buffer<4xf32>):
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<4xf32>) dims [] : !sched.buffer<1152921504606846976xf32> -> !sched.buffer<1152921504606846976xf32>
  sched.return []
}

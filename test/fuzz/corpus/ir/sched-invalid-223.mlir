// A stride so large that the last element's index overflows int64.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.copy %x -> %y sizes [4] src [0, 4611686018427387904] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

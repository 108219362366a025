// (3 - 1) * 2^62 does not fit in int64.
sched.mesh @mesh axes ["tp"] sizes [3]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * 4611686018427387904) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

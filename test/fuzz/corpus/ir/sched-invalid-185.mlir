sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4xf32>, %o: !sched.buffer<4x8xf32>):
  sched.one_hot %i, %o : !sched.buffer<4xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

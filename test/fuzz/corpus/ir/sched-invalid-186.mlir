sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<i64>, %o: !sched.buffer<f32>):
  sched.one_hot %i, %o : !sched.buffer<i64>, !sched.buffer<f32>
  sched.return []
}

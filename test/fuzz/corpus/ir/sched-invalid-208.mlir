sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%s: !sched.buffer<24x8xf32>, %i: !sched.buffer<4x2xi64>, %o: !sched.buffer<4x2x8xf32>):
  sched.expert_gather %s, %i, %o : !sched.buffer<24x8xf32>, !sched.buffer<4x2xi64>, !sched.buffer<4x2x8xf32>
  sched.return []
}

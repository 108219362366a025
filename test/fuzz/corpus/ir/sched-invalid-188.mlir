sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x2xi64>):
  sched.topk %x, %v, %i {k = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  sched.return []
}

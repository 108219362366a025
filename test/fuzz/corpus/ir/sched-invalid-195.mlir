sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x2xi64>):
  sched.topk_gating %x, %v, %i {k = 16, normalize = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  sched.return []
}

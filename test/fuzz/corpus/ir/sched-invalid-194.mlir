sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x4x8xf32>, %v: !sched.buffer<2x4x2xf32>, %i: !sched.buffer<2x4x2xi64>):
  sched.topk_gating %x, %v, %i {k = 2, normalize = true} : !sched.buffer<2x4x8xf32>, !sched.buffer<2x4x2xf32>, !sched.buffer<2x4x2xi64>
  sched.return []
}

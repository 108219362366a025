sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  sched.dropout %x, %x {rate = -0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x7xf32>):
  sched.rope %x, %x {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<4x7xf32>, !sched.buffer<4x7xf32>
  sched.return []
}

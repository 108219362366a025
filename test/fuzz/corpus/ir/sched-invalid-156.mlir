sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8x4xf32>):
  sched.rope %x, %y {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

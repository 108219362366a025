// NaN is not positive either.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  sched.rope %x, %x {theta = 0x7FF8000000000000 : f64, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

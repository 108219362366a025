// An instruction's outputs do not overlap its other operands.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.dropout %x, %x {rate = 0.1, seed = 1} : !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.assign @w = %x : !sched.buffer<8xf32>
  sched.return []
}

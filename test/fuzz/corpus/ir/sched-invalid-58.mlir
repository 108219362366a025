sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.assign @w = %x : !sched.buffer<4xf32>
  sched.fill %y value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.assign @w = %a : !sched.buffer<4xf32>
  sched.return []
}

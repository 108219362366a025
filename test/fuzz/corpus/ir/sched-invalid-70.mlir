sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(1, 1) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.fill %a value 1.0 : !sched.buffer<4xf32>
  sched.return []
}

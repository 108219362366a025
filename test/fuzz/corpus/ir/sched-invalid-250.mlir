sched.program @p align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

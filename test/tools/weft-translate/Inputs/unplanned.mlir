sched.program @p align(64) events(0) streams ["compute"] {
  %a = sched.alloc : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return ["a"] %a : !sched.buffer<4xf32>
}

// An unplanned program still has its stream order checked.
sched.program @p align(16) events(0) streams ["compute", "comm"] {
  %a = sched.alloc : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.fill %a value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return ["a"] %a : !sched.buffer<4xf32>
}

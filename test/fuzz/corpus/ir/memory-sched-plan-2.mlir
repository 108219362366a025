// A planned program is left as it is.
sched.program @planned arena(4096) align(64) events(0) streams ["compute"] {
  %a = sched.alloc offset(128) live(0, 1) : !sched.buffer<16xf32>
  sched.fill %a value 1.0 : !sched.buffer<16xf32>
  sched.return ["a"] %a : !sched.buffer<16xf32>
}

sched.program @p arena(256) align(64) events(0) streams ["compute"] {
  %a = sched.alloc offset(-64) live(0, 0) : !sched.buffer<4xf32>
  sched.return []
}

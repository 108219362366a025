// Larger than the whole arena: the check must not overflow on offset + size.
sched.program @p arena(16) align(1) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  sched.return []
}

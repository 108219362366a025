// An offset near 2^63: the end, offset + size, does not fit in int64.
sched.program @p arena(128) align(64) events(0) streams ["compute"] {
  %a = sched.alloc offset(9223372036854775744) live(0, 0) : !sched.buffer<24xf32>
  sched.return []
}

// Partial overlap at different offsets: [0, 32) and [16, 48).
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  %b = sched.alloc offset(16) live(0, 0) : !sched.buffer<8xf32>
  sched.copy %a -> %b sizes [8] src [0, 1] dst [0, 1] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

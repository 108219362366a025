// Two buffers whose bytes overlap ([0, 32) and [0, 16)) and whose live
// ranges meet at instruction 1.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 1) : !sched.buffer<8xf32>
  %b = sched.alloc offset(0) live(1, 2) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<8xf32>
  sched.fill %a value 1.0 : !sched.buffer<8xf32>
  sched.fill %b value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// Overlapping views of one buffer count too.
sched.program @p arena(64) align(1) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<16xf32>
  %lo = sched.view %a[0] : !sched.buffer<16xf32> to !sched.buffer<8xf32>
  %mid = sched.view %a[16] : !sched.buffer<16xf32> to !sched.buffer<8xf32>
  sched.copy %lo -> %mid sizes [8] src [0, 1] dst [0, 1] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

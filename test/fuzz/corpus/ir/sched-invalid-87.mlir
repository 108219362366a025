// The same through a view and with the buffers in the other order of offset.
sched.program @p arena(64) align(16) events(0) streams ["compute", "comm"] {
  %b = sched.alloc offset(16) live(1, 1) : !sched.buffer<4xf32>
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  %v = sched.view %a[16] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  %y = sched.alloc offset(32) live(0, 1) : !sched.buffer<4xf32>
  sched.copy %v -> %y sizes [4] src [0, 1] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// A view is used within the live range of the alloc it views.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  %v = sched.view %a[16] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<8xf32>
  sched.fill %v value 1.0 : !sched.buffer<4xf32>
  sched.return []
}

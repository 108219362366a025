sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  %v = sched.view %x[20] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.return []
}

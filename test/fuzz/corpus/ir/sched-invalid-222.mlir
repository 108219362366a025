sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<8xbf16>):
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 3] : !sched.buffer<4xf32> -> !sched.buffer<8xbf16>
  sched.return []
}

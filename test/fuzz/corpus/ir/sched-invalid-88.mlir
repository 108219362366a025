// A record before the write does not order the write.
sched.program @p arena(0) align(1) events(1) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.record 0
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.wait 0 on "comm"
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

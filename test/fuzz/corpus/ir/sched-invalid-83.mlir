// Read after write across streams.
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

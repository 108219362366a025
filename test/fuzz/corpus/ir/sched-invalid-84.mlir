// Write after write across streams.
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.fill %x value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

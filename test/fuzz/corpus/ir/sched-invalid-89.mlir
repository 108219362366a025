// The positive counterpart: each of the hazards above, ordered by an event,
// verifies (read after write, write after read, write after write, and a
// buffer reusing bytes last accessed on another stream).
sched.program @p arena(64) align(16) events(2) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  %a = sched.alloc offset(0) live(0, 2) : !sched.buffer<4xf32>
  %b = sched.alloc offset(0) live(3, 12) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.record 0
  sched.wait 0 on "comm"
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.record 1
  sched.wait 1 on "comm"
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.record 0 on "comm"
  sched.wait 0
  sched.fill %x value 1.0 : !sched.buffer<4xf32>
  sched.fill %y value 1.0 : !sched.buffer<4xf32>
  sched.return ["b"] %b : !sched.buffer<4xf32>
}

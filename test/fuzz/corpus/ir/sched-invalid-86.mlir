// A buffer reusing the bytes of one last accessed on another stream: %b's
// write on "comm" may run before %a's on "compute" has finished.
sched.program @p arena(64) align(16) events(0) streams ["compute", "comm"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  %b = sched.alloc offset(0) live(1, 1) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

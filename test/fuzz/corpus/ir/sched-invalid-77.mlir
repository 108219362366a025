// Unnamed, an instruction is on "compute", which must then be declared.
sched.program @p arena(0) align(1) events(0) streams ["comm"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

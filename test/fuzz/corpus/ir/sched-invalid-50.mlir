sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.return ["a"] %x : !sched.buffer<4xf32> {split = [[], []]}
}

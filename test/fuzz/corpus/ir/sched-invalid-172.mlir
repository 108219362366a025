sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<32xf32>):
  sched.softmax %x, %y {dim = 1} : !sched.buffer<4x8xf32>, !sched.buffer<32xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %i: !sched.buffer<4x2xi64>, %o: !sched.buffer<8x3x8xf32>):
  sched.expert_dispatch %x, %i, %o {num_experts = 8, capacity = -1} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xi64>, !sched.buffer<8x3x8xf32>
  sched.return []
}

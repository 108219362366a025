sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%p: !sched.buffer<4x2x8xf32>, %i: !sched.buffer<3x2xi64>, %o: !sched.buffer<8x3x8xf32>):
  sched.expert_scatter %p, %i, %o {num_experts = 8, capacity = 3} : !sched.buffer<4x2x8xf32>, !sched.buffer<3x2xi64>, !sched.buffer<8x3x8xf32>
  sched.return []
}

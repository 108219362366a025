sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%pairs: !sched.buffer<4x2x8xf32>, %ids: !sched.buffer<4x2xi64>, %slots: !sched.buffer<8x3x8xf32>, %s: !sched.buffer<8xf16>):
  sched.expert_scatter %pairs, %ids, %slots scratch(%s : !sched.buffer<8xf16>) {num_experts = 8, capacity = 3} : !sched.buffer<4x2x8xf32>, !sched.buffer<4x2xi64>, !sched.buffer<8x3x8xf32>
  sched.return []
}

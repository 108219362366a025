sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%slots: !sched.buffer<8x3x8xf32>, %ids: !sched.buffer<4x2xi64>, %pairs: !sched.buffer<4x2x8xf32>, %s: !sched.buffer<7xf32>):
  sched.expert_gather %slots, %ids, %pairs scratch(%s : !sched.buffer<7xf32>) : !sched.buffer<8x3x8xf32>, !sched.buffer<4x2xi64>, !sched.buffer<4x2x8xf32>
  sched.return []
}

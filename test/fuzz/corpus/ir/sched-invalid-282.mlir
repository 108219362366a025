sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%slots: !sched.buffer<8x3x8xf32>, %tv: !sched.buffer<4x2xf32>, %ids: !sched.buffer<4x2xi64>, %y: !sched.buffer<4x8xf32>, %s: !sched.buffer<8xi32>):
  sched.expert_combine %slots, %tv, %ids, %y scratch(%s : !sched.buffer<8xi32>) : !sched.buffer<8x3x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>, !sched.buffer<4x8xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xi32>, %d: !sched.buffer<8x8xf32>, %t: !sched.buffer<32x16xf32>):
  sched.embedding_grad %ids, %d, %t {vocab_axes = []} : !sched.buffer<8xi32>, !sched.buffer<8x8xf32>, !sched.buffer<32x16xf32>
  sched.return []
}

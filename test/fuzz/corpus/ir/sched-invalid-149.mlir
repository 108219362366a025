sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xbf16>, %d: !sched.buffer<8x16xf32>, %t: !sched.buffer<32x16xf32>):
  sched.embedding_grad %ids, %d, %t {vocab_axes = []} : !sched.buffer<8xbf16>, !sched.buffer<8x16xf32>, !sched.buffer<32x16xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xf32>, %dx: !sched.buffer<8x4xf32>, %s: !sched.buffer<66xi32>):
  sched.cross_entropy_grad %x, %l, %d, %dx scratch(%s : !sched.buffer<66xi32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xbf16>):
  sched.cross_entropy_grad %x, %l, %d, %x {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xbf16>, !sched.buffer<8x4xf32>
  sched.return []
}

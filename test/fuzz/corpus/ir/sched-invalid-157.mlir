sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>):
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<f32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

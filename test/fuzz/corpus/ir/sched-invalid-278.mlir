// Cross-entropy over 8 positions: f32 statistics [3, 8] (96 bytes, aligned
// to 256), then the f64 count of positions not ignored.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>, %s: !sched.buffer<64xf32>):
  sched.cross_entropy %x, %l, %loss scratch(%s : !sched.buffer<64xf32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

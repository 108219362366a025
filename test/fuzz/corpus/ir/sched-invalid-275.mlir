// Norm gradients over 4 rows of 8: f64 row statistics (64 bytes, aligned
// to 256), then f64 column partials of dweight and dbias (128 bytes).
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %dx: !sched.buffer<4x8xf32>, %dw: !sched.buffer<8xf32>, %db: !sched.buffer<8xf32>, %s: !sched.buffer<64xf32>):
  sched.layer_norm_grad %x, %w, %x, %dx, %dw, %db scratch(%s : !sched.buffer<64xf32>) {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

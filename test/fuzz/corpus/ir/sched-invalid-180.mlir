sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %d: !sched.buffer<2x8xf32>):
  sched.layer_norm_grad %x, %w, %x, %d, %w, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<2x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<4xf32>):
  sched.layer_norm_grad %x, %w, %x, %x, %w, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<4xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4xf32>, !sched.buffer<4xf32>
  sched.return []
}

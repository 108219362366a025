sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>, %w: !sched.buffer<8xf32>):
  sched.layer_norm_grad %x, %w, %x, %x, %w, %w {epsilon = 1.0e-5} : !sched.buffer<f32>, !sched.buffer<8xf32>, !sched.buffer<f32>, !sched.buffer<f32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

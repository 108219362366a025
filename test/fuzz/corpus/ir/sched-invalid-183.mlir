sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>):
  sched.rms_norm_grad %x, %w, %x, %x, %w {epsilon = -1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %dx: !sched.buffer<4x8xf32>, %dw: !sched.buffer<8xf32>, %s: !sched.buffer<192xbf16>):
  sched.rms_norm_grad %x, %w, %x, %dx, %dw scratch(%s : !sched.buffer<192xbf16>) {epsilon = 1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// A whole-tensor sum of 2^19 elements runs in 128 chunks: 128 f64
// partials of its one output.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<65536x8xf32>, %y: !sched.buffer<f32>, %s: !sched.buffer<128xf32>):
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<128xf32>) dims [0, 1] : !sched.buffer<65536x8xf32> -> !sched.buffer<f32>
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<f32>):
  sched.reduce sum %x -> %y dims [1, 0] : !sched.buffer<4x8xf32> -> !sched.buffer<f32>
  sched.return []
}

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  %w = sched.get @w : !sched.buffer<4xf32>
  sched.copy %x -> %w sizes [4] src [0, 1] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

sched.param @w init(zeros) : !sched.buffer<8xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.collective all_reduce sum %x -> %x over @w ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.launch @k grid [1, 1, 1] block 32 outs(%x, %y : !sched.buffer<4xf32>, !sched.buffer<4xf32>) scalars []
  sched.return []
}

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

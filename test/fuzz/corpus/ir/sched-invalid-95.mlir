// A generated kernel loops over its first i64 scalar: it must be the first
// output's element count.
sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars [1099511627776]
  sched.return []
}

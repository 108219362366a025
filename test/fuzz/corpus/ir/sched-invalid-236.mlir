sched.mesh @mesh axes ["ep"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<8xf32>, %c: !sched.buffer<2xi32>):
  sched.collective all_to_all none %x -> %y counts(%c : !sched.buffer<2xi32>) over @mesh ["ep"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

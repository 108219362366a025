// A mesh whose rank count would overflow (or pass 2^30) is refused at the
// mesh, before any group is counted from it.
sched.mesh @mesh axes ["a", "b"] sizes [4294967296, 4294967296]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.collective all_reduce sum %x -> %x over @mesh ["a", "b"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

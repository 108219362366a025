//===----------------------------------------------------------------------===//
// sched.collective
//===----------------------------------------------------------------------===//

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.collective all_reduce none %x -> %x over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

//===----------------------------------------------------------------------===//
// Library kernels
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32xf32>, %ids: !sched.buffer<8xi32>, %o: !sched.buffer<8x16xf32>):
  sched.embedding %t, %ids, %o {vocab_axes = []} : !sched.buffer<32xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  sched.return []
}

// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s

// sched.ring_shift round-trips: a block out to the next rank of the ring
// and one in from the previous, as one instruction on the comm stream.
sched.mesh @mesh axes ["dp", "cp"] sizes [2, 4]
// CHECK-LABEL: sched.program @ring
sched.program @ring align(64) events(0) streams ["compute", "comm"] {
^bb0(%k: !sched.buffer<2x8x2x16xf32>, %p: !sched.buffer<8xi32>):
  %k1 = sched.alloc : !sched.buffer<2x8x2x16xf32>
  %p1 = sched.alloc : !sched.buffer<8xi32>
  // CHECK: sched.ring_shift %{{.*}} -> %{{.*}} over @mesh "cp" offset 1 tag 1048576 on "comm" : <2x8x2x16xf32> -> <2x8x2x16xf32>
  sched.ring_shift %k -> %k1 over @mesh "cp" offset 1 tag 1048576 on "comm" : !sched.buffer<2x8x2x16xf32> -> !sched.buffer<2x8x2x16xf32>
  // CHECK: sched.ring_shift %{{.*}} -> %{{.*}} over @mesh "cp" offset -1 tag 1048577 on "comm" : <8xi32> -> <8xi32>
  sched.ring_shift %p -> %p1 over @mesh "cp" offset -1 tag 1048577 on "comm" : !sched.buffer<8xi32> -> !sched.buffer<8xi32>
  sched.return ["k", "p"] %k1, %p1 : !sched.buffer<2x8x2x16xf32>, !sched.buffer<8xi32>
}

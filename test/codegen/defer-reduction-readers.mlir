// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(sched.program(weft-sched-defer-reduction-readers))' | FileCheck %s

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @g inputs [!sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.kernel @acc inputs [!sched.buffer<32xbf16>, !sched.buffer<32xf32>] outputs [!sched.buffer<32xf32>] scalars []
sched.param @a.grad_acc init(zeros) state : !sched.buffer<32xf32>
sched.param @b.grad_acc init(zeros) state : !sched.buffer<32xf32>

// Two layers' gradients reduce-scattered as the backward makes them, each
// narrowed and added into its accumulator right after: the first chain
// (copy, update) moves to just before the second's, so the first
// reduction runs while layer b's gradient is computed.
// CHECK-LABEL: sched.program @backward
// CHECK: sched.collective reduce_scatter sum %{{.*}} -> %[[RA:[0-9]+]]
// CHECK: sched.launch @g
// CHECK: sched.collective reduce_scatter sum %{{.*}} -> %[[RB:[0-9]+]]
// CHECK: sched.copy %[[RA]] ->
// CHECK-NEXT: sched.launch @acc
// CHECK-NEXT: sched.copy %[[RB]] ->
// CHECK: sched.launch @acc
sched.program @backward align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %ga = sched.alloc : !sched.buffer<64xf32>
  sched.launch @g grid [1, 1, 1] block 1 ins(%x : !sched.buffer<64xf32>) outs(%ga : !sched.buffer<64xf32>) scalars []
  %ra = sched.alloc : !sched.buffer<32xf32>
  sched.collective reduce_scatter sum %ga -> %ra over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<32xf32>
  %na = sched.alloc : !sched.buffer<32xbf16>
  sched.copy %ra -> %na sizes [32] src [0, 1] dst [0, 1] : <32xf32> -> <32xbf16>
  %acca = sched.get @a.grad_acc : !sched.buffer<32xf32>
  %newa = sched.alloc : !sched.buffer<32xf32>
  sched.launch @acc grid [1, 1, 1] block 1 ins(%na, %acca : !sched.buffer<32xbf16>, !sched.buffer<32xf32>) outs(%newa : !sched.buffer<32xf32>) scalars []
  %gb = sched.alloc : !sched.buffer<64xf32>
  sched.launch @g grid [1, 1, 1] block 1 ins(%x : !sched.buffer<64xf32>) outs(%gb : !sched.buffer<64xf32>) scalars []
  %rb = sched.alloc : !sched.buffer<32xf32>
  sched.collective reduce_scatter sum %gb -> %rb over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<32xf32>
  %nb = sched.alloc : !sched.buffer<32xbf16>
  sched.copy %rb -> %nb sizes [32] src [0, 1] dst [0, 1] : <32xf32> -> <32xbf16>
  %accb = sched.get @b.grad_acc : !sched.buffer<32xf32>
  %newb = sched.alloc : !sched.buffer<32xf32>
  sched.launch @acc grid [1, 1, 1] block 1 ins(%nb, %accb : !sched.buffer<32xbf16>, !sched.buffer<32xf32>) outs(%newb : !sched.buffer<32xf32>) scalars []
  sched.assign @a.grad_acc = %newa : !sched.buffer<32xf32>
  sched.assign @b.grad_acc = %newb : !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @g inputs [!sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.kernel @acc inputs [!sched.buffer<32xf32>, !sched.buffer<32xf32>] outputs [!sched.buffer<32xf32>] scalars []
sched.kernel @h inputs [!sched.buffer<32xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.param @a.grad_acc init(zeros) state : !sched.buffer<32xf32>
sched.param @b.grad_acc init(zeros) state : !sched.buffer<32xf32>

// A reader whose result the program reads again (not only at its end)
// stays where it is.
// CHECK-LABEL: sched.program @used
// CHECK: sched.collective reduce_scatter sum %{{.*}} -> %[[RA:[0-9]+]]
// CHECK-NEXT: %{{.*}} = sched.get @a.grad_acc
// CHECK-NEXT: %[[NEWA:.*]] = sched.alloc
// CHECK-NEXT: sched.launch @acc {{.*}} ins(%[[RA]],
// CHECK-NEXT: %{{.*}} = sched.alloc
// CHECK-NEXT: sched.launch @h {{.*}} ins(%[[NEWA]] :
sched.program @used align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %ga = sched.alloc : !sched.buffer<64xf32>
  sched.launch @g grid [1, 1, 1] block 1 ins(%x : !sched.buffer<64xf32>) outs(%ga : !sched.buffer<64xf32>) scalars []
  %ra = sched.alloc : !sched.buffer<32xf32>
  sched.collective reduce_scatter sum %ga -> %ra over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<32xf32>
  %acca = sched.get @a.grad_acc : !sched.buffer<32xf32>
  %newa = sched.alloc : !sched.buffer<32xf32>
  sched.launch @acc grid [1, 1, 1] block 1 ins(%ra, %acca : !sched.buffer<32xf32>, !sched.buffer<32xf32>) outs(%newa : !sched.buffer<32xf32>) scalars []
  %gb = sched.alloc : !sched.buffer<64xf32>
  sched.launch @h grid [1, 1, 1] block 1 ins(%newa : !sched.buffer<32xf32>) outs(%gb : !sched.buffer<64xf32>) scalars []
  %rb = sched.alloc : !sched.buffer<32xf32>
  sched.collective reduce_scatter sum %gb -> %rb over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<32xf32>
  %accb = sched.get @b.grad_acc : !sched.buffer<32xf32>
  %newb = sched.alloc : !sched.buffer<32xf32>
  sched.launch @acc grid [1, 1, 1] block 1 ins(%rb, %accb : !sched.buffer<32xf32>, !sched.buffer<32xf32>) outs(%newb : !sched.buffer<32xf32>) scalars []
  sched.assign @a.grad_acc = %newa : !sched.buffer<32xf32>
  sched.assign @b.grad_acc = %newb : !sched.buffer<32xf32>
  sched.return []
}

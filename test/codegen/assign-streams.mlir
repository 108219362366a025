// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(sched.program(weft-sched-assign-streams))' | FileCheck %s
// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(sched.program(weft-sched-assign-streams,weft-sched-plan-memory))' | FileCheck %s --check-prefix=PLAN

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @k inputs [!sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []

// A gradient's all-reduce goes to the comm stream once compute has written
// it; compute runs on (the next layer's backward) and waits only where it
// reads the reduced gradient.
// CHECK-LABEL: sched.program @overlap align(64) events(2) streams ["compute", "comm"]
// CHECK: sched.launch @k {{.*}} outs(%[[G:.*]] : !sched.buffer<64xf32>)
// CHECK-NEXT: sched.record 0{{$}}
// CHECK-NEXT: sched.wait 0 on "comm"
// CHECK-NEXT: sched.collective all_reduce sum %[[G]] -> %[[R:.*]] over @mesh ["dp"] on "comm"
// CHECK-NEXT: sched.record 1 on "comm"
// CHECK-NEXT: sched.launch @k {{.*}} ins(%[[X:.*]] : {{.*}}) outs(%[[Y:.*]] :
// CHECK-NEXT: sched.launch @k {{.*}} ins(%[[Y]] :
// CHECK-NEXT: sched.wait 1{{$}}
// CHECK-NEXT: sched.launch @k {{.*}} ins(%[[R]] :
// PLAN-LABEL: sched.program @overlap arena
// The collective's input and output stay allocated until the wait at
// instruction 7, so the two launches under it cannot reuse their bytes.
// PLAN: %[[G:.*]] = sched.alloc offset({{[0-9]+}}) live(0, 7)
// PLAN: %[[R:.*]] = sched.alloc offset({{[0-9]+}}) live(3, 8)
sched.program @overlap align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %g = sched.alloc : !sched.buffer<64xf32>
  %r = sched.alloc : !sched.buffer<64xf32>
  %y = sched.alloc : !sched.buffer<64xf32>
  %z = sched.alloc : !sched.buffer<64xf32>
  %o = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x : !sched.buffer<64xf32>) outs(%g : !sched.buffer<64xf32>) scalars []
  sched.collective all_reduce sum %g -> %r over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x : !sched.buffer<64xf32>) outs(%y : !sched.buffer<64xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%y : !sched.buffer<64xf32>) outs(%z : !sched.buffer<64xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%r : !sched.buffer<64xf32>) outs(%o : !sched.buffer<64xf32>) scalars []
  sched.return ["o", "z"] %o, %z : !sched.buffer<64xf32>, !sched.buffer<64xf32>
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]

// A result only the caller reads: compute waits before the assigns, the
// last instructions.
// CHECK-LABEL: sched.program @tail
// CHECK: sched.collective {{.*}} on "comm"
// CHECK-NEXT: sched.record 1 on "comm"
// CHECK-NEXT: sched.wait 1{{$}}
// CHECK-NEXT: sched.assign @w
sched.param @w init(zeros) : !sched.buffer<64xf32>
sched.program @tail align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %r = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_reduce sum %x -> %r over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<64xf32>
  sched.assign @w = %r : !sched.buffer<64xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp", "tp"] sizes [2, 2]

// A vocabulary-parallel cross-entropy combines its row statistics on the
// compute stream: it first waits for the comm stream's collective still in
// flight (two collectives at once on two streams can deadlock NCCL); one
// without vocabulary axes does not, and the wait the assign would have had
// is then passed already.
// CHECK-LABEL: sched.program @vocab
// CHECK: sched.collective {{.*}} on "comm"
// CHECK-NEXT: sched.record 1 on "comm"
// CHECK-NEXT: sched.cross_entropy {{.*}}vocab_axes = []
// CHECK-NEXT: sched.wait 1{{$}}
// CHECK-NEXT: sched.cross_entropy {{.*}}vocab_axes = ["tp"]
// CHECK-NEXT: sched.assign @w
sched.param @w init(zeros) : !sched.buffer<64xf32>
sched.program @vocab align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>, %logits: !sched.buffer<8x16xf32>, %labels: !sched.buffer<8xi32>):
  %r = sched.alloc : !sched.buffer<64xf32>
  %l0 = sched.alloc : !sched.buffer<1xf32>
  %l1 = sched.alloc : !sched.buffer<1xf32>
  sched.collective all_reduce sum %x -> %r over @mesh ["dp"] : !sched.buffer<64xf32> -> !sched.buffer<64xf32>
  sched.cross_entropy %logits, %labels, %l0 {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x16xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.cross_entropy %logits, %labels, %l1 {ignore_index = -100, vocab_axes = ["tp"]} : !sched.buffer<8x16xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.assign @w = %r : !sched.buffer<64xf32>
  sched.return ["a", "b"] %l0, %l1 : !sched.buffer<1xf32>, !sched.buffer<1xf32>
}

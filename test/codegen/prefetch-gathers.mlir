// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(sched.program(weft-sched-prefetch-gathers))' | FileCheck %s

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @k inputs [!sched.buffer<64xf32>, !sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.param @a init(zeros) : !sched.buffer<32xf32>
sched.param @b init(zeros) : !sched.buffer<32xf32>
sched.param @c init(zeros) : !sched.buffer<32xf32>

// Three parameters gathered (64 floats each, the window) just before
// their readers: b's gather moves before a's reader, c's before b's. A
// gather stays where it would pass a write of its parameter.
// CHECK-LABEL: sched.program @layers
// CHECK: sched.collective all_gather none %{{.*}} -> %[[GA:[0-9]+]] over
// CHECK: %[[B:.*]] = sched.get @b
// CHECK-NEXT: %[[GB:.*]] = sched.alloc
// CHECK-NEXT: sched.collective all_gather none %[[B]] -> %[[GB]] over
// CHECK-NEXT: sched.launch @k {{.*}} ins(%{{.*}}, %[[GA]] :
// CHECK: %[[C:.*]] = sched.get @c
// CHECK-NEXT: %[[GC:.*]] = sched.alloc
// CHECK-NEXT: sched.collective all_gather none %[[C]] -> %[[GC]] over
// CHECK-NEXT: sched.launch @k {{.*}} ins(%{{.*}}, %[[GB]] :
// CHECK: sched.launch @k {{.*}} ins(%{{.*}}, %[[GC]] :
sched.program @layers align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %a = sched.get @a : !sched.buffer<32xf32>
  %ga = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %a -> %ga over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y0 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x, %ga : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y0 : !sched.buffer<64xf32>) scalars []
  %b = sched.get @b : !sched.buffer<32xf32>
  %gb = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %b -> %gb over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y1 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%y0, %gb : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y1 : !sched.buffer<64xf32>) scalars []
  %c = sched.get @c : !sched.buffer<32xf32>
  %gc = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %c -> %gc over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y2 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%y1, %gc : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y2 : !sched.buffer<64xf32>) scalars []
  sched.return ["y"] %y2 : !sched.buffer<64xf32>
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @k inputs [!sched.buffer<64xf32>, !sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.kernel @u inputs [!sched.buffer<32xf32>] outputs [!sched.buffer<32xf32>] scalars []
sched.param @a init(zeros) : !sched.buffer<32xf32>
sched.param @b init(zeros) : !sched.buffer<32xf32>

// b is updated in place before its gather: the gather stays after the
// update, not before a's reader.
// CHECK-LABEL: sched.program @updated
// CHECK: sched.launch @k {{.*}} ins(%{{.*}}, %[[GA:[0-9]+]] :
// CHECK: sched.launch @u {{.*}} outs(%[[B:.*]] : !sched.buffer<32xf32>)
// CHECK-NEXT: %{{.*}} = sched.alloc
// CHECK-NEXT: sched.collective all_gather none %[[B]]
sched.program @updated align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>, %x32: !sched.buffer<32xf32>):
  %a = sched.get @a : !sched.buffer<32xf32>
  %ga = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %a -> %ga over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y0 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x, %ga : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y0 : !sched.buffer<64xf32>) scalars []
  %b = sched.get @b : !sched.buffer<32xf32>
  sched.launch @u grid [1, 1, 1] block 1 ins(%x32 : !sched.buffer<32xf32>) outs(%b : !sched.buffer<32xf32>) scalars []
  %gb = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %b -> %gb over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y1 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%y0, %gb : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y1 : !sched.buffer<64xf32>) scalars []
  sched.return ["y"] %y1 : !sched.buffer<64xf32>
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.kernel @k inputs [!sched.buffer<64xf32>, !sched.buffer<64xf32>] outputs [!sched.buffer<64xf32>] scalars []
sched.kernel @r inputs [!sched.buffer<64xf32>, !sched.buffer<16x4xf8E4M3FN>] outputs [!sched.buffer<64xf32>] scalars []
sched.param @a init(zeros) : !sched.buffer<32xf32>
sched.param @b init(zeros) : !sched.buffer<8x4xf32>

// An FP8 weight (weft-fp8-gather's): its shard's maximum, max
// all-reduced, and the cast to codes move ahead with the gather of the
// codes, before a's reader.
// CHECK-LABEL: sched.program @fp8
// CHECK: sched.collective all_gather none %{{.*}} -> %[[GA:[0-9]+]] over
// CHECK: %[[B:.*]] = sched.get @b
// CHECK: sched.fp8_amax %[[B]], %[[M:[0-9]+]]
// CHECK: sched.collective all_reduce max %[[M]] -> %[[MR:[0-9]+]]
// CHECK: sched.fp8_cast %[[B]], %[[MR]], %[[C:[0-9]+]], %{{.*}}
// CHECK: sched.collective all_gather none %[[C]] -> %[[GC:[0-9]+]]
// CHECK-NEXT: sched.launch @k {{.*}} ins(%{{.*}}, %[[GA]] :
// CHECK-NEXT: sched.alloc
// CHECK-NEXT: sched.launch @r {{.*}} ins(%{{.*}}, %[[GC]] :
sched.program @fp8 align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64xf32>):
  %a = sched.get @a : !sched.buffer<32xf32>
  %ga = sched.alloc : !sched.buffer<64xf32>
  sched.collective all_gather none %a -> %ga over @mesh ["dp"] : !sched.buffer<32xf32> -> !sched.buffer<64xf32>
  %y0 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x, %ga : !sched.buffer<64xf32>, !sched.buffer<64xf32>) outs(%y0 : !sched.buffer<64xf32>) scalars []
  %b = sched.get @b : !sched.buffer<8x4xf32>
  %m = sched.alloc : !sched.buffer<1x1xf32>
  sched.fp8_amax %b, %m : !sched.buffer<8x4xf32>, !sched.buffer<1x1xf32>
  %mr = sched.alloc : !sched.buffer<1x1xf32>
  sched.collective all_reduce max %m -> %mr over @mesh ["dp"] : !sched.buffer<1x1xf32> -> !sched.buffer<1x1xf32>
  %c = sched.alloc : !sched.buffer<8x4xf8E4M3FN>
  %s = sched.alloc : !sched.buffer<1xf32>
  sched.fp8_cast %b, %mr, %c, %s : !sched.buffer<8x4xf32>, !sched.buffer<1x1xf32>, !sched.buffer<8x4xf8E4M3FN>, !sched.buffer<1xf32>
  %gc = sched.alloc : !sched.buffer<16x4xf8E4M3FN>
  sched.collective all_gather none %c -> %gc over @mesh ["dp"] : !sched.buffer<8x4xf8E4M3FN> -> !sched.buffer<16x4xf8E4M3FN>
  %y1 = sched.alloc : !sched.buffer<64xf32>
  sched.launch @r grid [1, 1, 1] block 1 ins(%y0, %gc : !sched.buffer<64xf32>, !sched.buffer<16x4xf8E4M3FN>) outs(%y1 : !sched.buffer<64xf32>) scalars []
  sched.return ["y"] %y1 : !sched.buffer<64xf32>
}

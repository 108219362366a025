// RUN: weft-opt %s -split-input-file --pass-pipeline='builtin.module(sched.program(weft-sched-plan-memory))' | FileCheck %s

sched.kernel @k inputs [!sched.buffer<16xf32>] outputs [!sched.buffer<16xf32>] scalars []

// Live ranges by instruction index: a [0, 3], b [1, 2], c [2, 2], d [3, 4]
// (to the end: it is returned). 64 bytes each at 64-byte alignment: d
// reuses b's bytes, the rest are disjoint; the view of a keeps a alive.
// CHECK-LABEL: sched.program @chain arena(192) align(64)
sched.program @chain align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16xf32>):
  // CHECK: %[[A:.*]] = sched.alloc offset(0) live(0, 3) : <16xf32>
  %a = sched.alloc : !sched.buffer<16xf32>
  // CHECK: %[[B:.*]] = sched.alloc offset(64) live(1, 2)
  %b = sched.alloc : !sched.buffer<16xf32>
  // CHECK: %[[C:.*]] = sched.alloc offset(128) live(2, 2)
  %c = sched.alloc : !sched.buffer<16xf32>
  // CHECK: %[[D:.*]] = sched.alloc offset(64) live(3, 4)
  %d = sched.alloc : !sched.buffer<16xf32>
  // Never used: removed, with its view.
  // CHECK-NOT: sched.alloc
  %unused = sched.alloc : !sched.buffer<1024xf32>
  %uview = sched.view %unused[0] : !sched.buffer<1024xf32> to !sched.buffer<16xf32>
  %av = sched.view %a[0] : !sched.buffer<16xf32> to !sched.buffer<4x4xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x : !sched.buffer<16xf32>) outs(%a : !sched.buffer<16xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%a : !sched.buffer<16xf32>) outs(%b : !sched.buffer<16xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%b : !sched.buffer<16xf32>) outs(%c : !sched.buffer<16xf32>) scalars []
  sched.copy %av -> %d sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<4x4xf32> -> !sched.buffer<16xf32>
  // CHECK: sched.return ["d"]
  sched.return ["d"] %d : !sched.buffer<16xf32>
}

// -----

sched.param @w init(zeros) : !sched.buffer<16xf32>

// An assigned value lives to the end; a 256-byte alignment rounds offsets.
// CHECK-LABEL: sched.program @update arena(320) align(256)
sched.program @update align(256) events(0) streams ["compute"] {
  %w = sched.get @w : !sched.buffer<16xf32>
  // CHECK: sched.alloc offset(0) live(0, 2)
  %n = sched.alloc : !sched.buffer<16xf32>
  // CHECK: sched.alloc offset(256) live(1, 1)
  %t = sched.alloc : !sched.buffer<16xf32>
  sched.copy %w -> %n sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<16xf32> -> !sched.buffer<16xf32>
  sched.copy %n -> %t sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<16xf32> -> !sched.buffer<16xf32>
  sched.assign @w = %n : !sched.buffer<16xf32>
  sched.return []
}

// -----

// A planned program is left as it is.
// CHECK-LABEL: sched.program @planned arena(4096)
// CHECK: sched.alloc offset(128) live(0, 1)
sched.program @planned arena(4096) align(64) events(0) streams ["compute"] {
  %a = sched.alloc offset(128) live(0, 1) : !sched.buffer<16xf32>
  sched.fill %a value 1.0 : !sched.buffer<16xf32>
  sched.return ["a"] %a : !sched.buffer<16xf32>
}

sched.kernel @k inputs [!sched.buffer<16xf32>] outputs [!sched.buffer<16xf32>] scalars []

// Live ranges by instruction index: a [0, 3], b [1, 2], c [2, 2], d [3, 4]
// (to the end: it is returned). 64 bytes each at 64-byte alignment: d
// reuses b's bytes, the rest are disjoint; the view of a keeps a alive.
sched.program @chain align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16xf32>):
  %a = sched.alloc : !sched.buffer<16xf32>
  %b = sched.alloc : !sched.buffer<16xf32>
  %c = sched.alloc : !sched.buffer<16xf32>
  %d = sched.alloc : !sched.buffer<16xf32>
  // Never used: removed, with its view.
  %unused = sched.alloc : !sched.buffer<1024xf32>
  %uview = sched.view %unused[0] : !sched.buffer<1024xf32> to !sched.buffer<16xf32>
  %av = sched.view %a[0] : !sched.buffer<16xf32> to !sched.buffer<4x4xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x : !sched.buffer<16xf32>) outs(%a : !sched.buffer<16xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%a : !sched.buffer<16xf32>) outs(%b : !sched.buffer<16xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%b : !sched.buffer<16xf32>) outs(%c : !sched.buffer<16xf32>) scalars []
  sched.copy %av -> %d sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<4x4xf32> -> !sched.buffer<16xf32>
  sched.return ["d"] %d : !sched.buffer<16xf32>
}

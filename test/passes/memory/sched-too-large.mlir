// RUN: weft-opt %s --pass-pipeline='builtin.module(sched.program(weft-sched-plan-memory))' -verify-diagnostics

sched.kernel @k inputs [!sched.buffer<16xf32>] outputs [!sched.buffer<16xf32>] scalars []

// A 2^62-byte buffer fills an arena; a 64-byte one live with it does not
// fit: the error names the largest of them and their total.
sched.program @full align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16xf32>):
  // expected-error @below {{this value's buffer of 4611686018427387904 bytes and the 1 others live at the same time need 4611686018427387968 bytes: larger than a memory arena may be (at most 2^62 bytes)}}
  %big = sched.alloc : !sched.buffer<1152921504606846976xf32>
  %a = sched.alloc : !sched.buffer<16xf32>
  %v = sched.view %big[0] : !sched.buffer<1152921504606846976xf32> to !sched.buffer<16xf32>
  sched.launch @k grid [1, 1, 1] block 1 ins(%x : !sched.buffer<16xf32>) outs(%v : !sched.buffer<16xf32>) scalars []
  sched.launch @k grid [1, 1, 1] block 1 ins(%v : !sched.buffer<16xf32>) outs(%a : !sched.buffer<16xf32>) scalars []
  sched.return ["a"] %a : !sched.buffer<16xf32>
}

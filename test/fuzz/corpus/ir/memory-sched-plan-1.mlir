sched.param @w init(zeros) : !sched.buffer<16xf32>

// An assigned value lives to the end; a 256-byte alignment rounds offsets.
sched.program @update align(256) events(0) streams ["compute"] {
  %w = sched.get @w : !sched.buffer<16xf32>
  %n = sched.alloc : !sched.buffer<16xf32>
  %t = sched.alloc : !sched.buffer<16xf32>
  sched.copy %w -> %n sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<16xf32> -> !sched.buffer<16xf32>
  sched.copy %n -> %t sizes [16] src [0, 1] dst [0, 1] : !sched.buffer<16xf32> -> !sched.buffer<16xf32>
  sched.assign @w = %n : !sched.buffer<16xf32>
  sched.return []
}

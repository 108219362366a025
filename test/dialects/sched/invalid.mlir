// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Every verifier error of the sched dialect: the buffer type, the module
// declarations, schedules, buffers, the memory plan and stream order of
// programs, and each instruction.

//===----------------------------------------------------------------------===//
// !sched.buffer
//===----------------------------------------------------------------------===//

// expected-error @+1 {{buffers cannot hold element type 'f64'}}
sched.param @w init(zeros) : !sched.buffer<4xf64>

// -----

// expected-error @+1 {{buffer of shape [4611686018427387904] is larger than 2^62 bytes}}
sched.param @w init(zeros) : !sched.buffer<4611686018427387904xf32>

// -----

//===----------------------------------------------------------------------===//
// sched.mesh
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'sched.mesh' op has 2 axes but 1 sizes}}
sched.mesh @mesh axes ["dp", "tp"] sizes [2]

// -----

// expected-error @+1 {{'sched.mesh' op axis 'dp' appears twice}}
sched.mesh @mesh axes ["dp", "dp"] sizes [2, 2]

// -----

// expected-error @+1 {{'sched.mesh' op axis 'tp' has size 0; sizes must be positive}}
sched.mesh @mesh axes ["dp", "tp"] sizes [2, 0]

// -----

//===----------------------------------------------------------------------===//
// sched.param
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'sched.param' op init 'normal' needs a scale}}
sched.param @w init(normal) : !sched.buffer<4xf32>

// -----

// expected-error @+1 {{'sched.param' op init 'zeros' takes no scale}}
sched.param @w init(zeros, 1.0) : !sched.buffer<4xf32>

// -----

// expected-error @+1 {{'sched.param' op must hold floats, not 'i32'}}
sched.param @w init(zeros) : !sched.buffer<4xi32>

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
// expected-error @+1 {{'sched.param' op split has 1 entries for a rank-2 parameter}}
sched.param @w init(zeros) {split = [["tp"]]} : !sched.buffer<4x4xf32>

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
// expected-error @+1 {{'sched.param' op split must list mesh axis names per dimension}}
sched.param @w init(zeros) {split = [[1]]} : !sched.buffer<4xf32>

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
// expected-error @+1 {{'sched.param' op checkpoint_rows 9 is not in [1, 8], the rows of the global tensor}}
sched.param @w init(zeros) {split = [["tp"], []], checkpoint_rows = 9} : !sched.buffer<4x4xf32>

// -----

// expected-error @+1 {{'sched.param' op checkpoint_rows 0 is not in [1, 4], the rows of the global tensor}}
sched.param @w init(zeros) {checkpoint_rows = 0} : !sched.buffer<4xf32>

// -----

// expected-error @+1 {{'sched.param' op is transient but not state: only a state tensor can be left to its initializer between steps}}
sched.param @w init(zeros) {transient} : !sched.buffer<4xf32>

// -----

// expected-error @+1 {{'sched.param' op is probe 'l.0/act_rms' but not transient state}}
sched.param @p init(zeros) state {probe = "l.0/act_rms", probe_fold = "rms"} : !sched.buffer<f32>

// -----

// expected-error @+1 {{'sched.param' op probe_fold must be mean, rms, max, max_over_mean or last, not 'median'}}
sched.param @p init(zeros) state {transient, probe = "l.0/act_rms", probe_fold = "median"} : !sched.buffer<f32>

// -----

// expected-error @+1 {{'sched.param' op probe and probe_fold come together}}
sched.param @p init(zeros) state {transient, probe = "l.0/act_rms"} : !sched.buffer<f32>

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
// expected-error @+1 {{'sched.param' op checkpoint_shape holds 12 elements, but the global tensor has 16}}
sched.param @w init(zeros) {split = [[], ["tp"]], checkpoint_shape = array<i64: 2, 6>} : !sched.buffer<4x2xf32>

// -----

// expected-error @+1 {{'sched.param' op takes checkpoint_rows or checkpoint_shape, not both}}
sched.param @w init(zeros) {checkpoint_rows = 2, checkpoint_shape = array<i64: 4>} : !sched.buffer<4xf32>

// -----

// expected-error @+1 {{'sched.param' op checkpoint_rows needs a tensor of rank 1 or more}}
sched.param @w init(zeros) {checkpoint_rows = 1} : !sched.buffer<f32>

// -----

// expected-error @+1 {{'sched.param' op names mesh axes but the module has no sched.mesh}}
sched.param @w init(zeros) {split = [["tp"]]} : !sched.buffer<4xf32>

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
// expected-error @+1 {{'sched.param' op mesh @mesh has no axis 'tp'}}
sched.param @w init(zeros) {split = [["tp"]]} : !sched.buffer<4xf32>

// -----

sched.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'sched.param' op names mesh axis 'tp' twice}}
sched.param @w init(zeros) {split = [["tp", "tp"]]} : !sched.buffer<4xf32>

// -----

//===----------------------------------------------------------------------===//
// sched.constant
//===----------------------------------------------------------------------===//

// A dense_resource blob's type need not be static.
// expected-error @+1 {{'sched.constant' op value must have a static shape}}
sched.constant @c dense_resource<blob> : tensor<?xf32>

// -----

// expected-error @+1 {{'sched.constant' op buffers cannot hold element type 'f64'}}
sched.constant @c dense<1.0> : tensor<4xf64>

// -----

// expected-error @+1 {{'sched.constant' op buffer of shape [2305843009213693953] is larger than 2^62 bytes}}
sched.constant @c dense<1.0> : tensor<2305843009213693953xf16>

// -----

//===----------------------------------------------------------------------===//
// sched.kernel
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'sched.kernel' op buffer arguments must be !sched.buffer, not tensor<4xf32>}}
sched.kernel @k inputs [tensor<4xf32>] outputs [] scalars []

// -----

// expected-error @+1 {{'sched.kernel' op buffer arguments must be !sched.buffer, not i32}}
sched.kernel @k inputs [] outputs [i32] scalars []

// -----

// expected-error @+1 {{'sched.kernel' op scalar arguments must be integers or floats, not '!sched.buffer<4xf32>'}}
sched.kernel @k inputs [] outputs [] scalars [!sched.buffer<4xf32>]

// -----

//===----------------------------------------------------------------------===//
// sched.schedule, sched.sequence, sched.run
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
// expected-error @+1 {{'sched.schedule' op needs at least one micro-batch, has 0}}
sched.schedule @s microbatches(0) {
  sched.sequence {
    sched.run @p microbatch(0)
  }
}

// -----

// expected-error @+1 {{'sched.schedule' op has no sched.sequence}}
sched.schedule @s microbatches(1) {
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // expected-error @+1 {{'builtin.module' op cannot appear in a schedule outside a sequence}}
  builtin.module {}
  sched.sequence {
    sched.run @p microbatch(0)
  }
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence {
    sched.run @p microbatch(0)
  }
  // expected-error @+1 {{'sched.sequence' op follows a sequence for every rank; select ranks with 'where'}}
  sched.sequence {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // expected-error @+1 {{'sched.sequence' op selects ranks along 'pp', which is not an axis of the module's sched.mesh}}
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
}

// -----

// No mesh at all: the axis cannot be one of it.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // expected-error @+1 {{'sched.sequence' op selects ranks along 'pp', which is not an axis of the module's sched.mesh}}
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["dp", "pp"] sizes [2, 2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
  // expected-error @+1 {{'sched.sequence' op must select ranks along 'pp' as the first sequence does}}
  sched.sequence where "dp" = 1 {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
  // expected-error @+1 {{'sched.sequence' op must select ranks along 'pp' as the first sequence does}}
  sched.sequence {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
  // expected-error @+1 {{'sched.sequence' op coordinate 2 is outside axis 'pp' of size 2}}
  sched.sequence where "pp" = 2 {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // expected-error @+1 {{'sched.sequence' op coordinate -1 is outside axis 'pp' of size 2}}
  sched.sequence where "pp" = -1 {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 1 {
    sched.run @p microbatch(0)
  }
  // expected-error @+1 {{'sched.sequence' op selects coordinate 1 of 'pp' a second time}}
  sched.sequence where "pp" = 1 {
    sched.run @p microbatch(0)
  }
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
// expected-error @+1 {{'sched.schedule' op has sequences for 1 of the 2 coordinates of 'pp'}}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
}

// -----

// A coordinate without an axis. (An axis without a coordinate is not
// reported: the coordinate loop reads the absent coordinate first.)
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // expected-error @+1 {{'sched.sequence' op needs both an axis and a coordinate}}
  sched.sequence attributes {coordinate = 0 : i64} {
    sched.run @p microbatch(0)
  }
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence {
    // expected-error @+1 {{'builtin.module' op cannot appear in a sequence; only sched.run}}
    builtin.module {}
    sched.run @p microbatch(0)
  }
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(2) {
  sched.sequence {
    // expected-error @+1 {{'sched.run' op micro-batch 2 is outside [0, 2)}}
    sched.run @p microbatch(2)
  }
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence {
    // expected-error @+1 {{'sched.run' op micro-batch -1 is outside [0, 1)}}
    sched.run @p microbatch(-1)
  }
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence {
    // expected-error @+1 {{'sched.run' op chunk -1 is negative}}
    sched.run @p microbatch(0) chunk(-1)
  }
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.schedule @s microbatches(1) {
  sched.sequence {
    // expected-error @+1 {{'sched.run' op runs @w, which is not a sched.program}}
    sched.run @w microbatch(0)
  }
}

// -----

//===----------------------------------------------------------------------===//
// sched.get, sched.view, sched.assign, sched.return
//===----------------------------------------------------------------------===//

sched.kernel @k inputs [] outputs [] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.get' op names @k, which is not a sched.param or sched.constant}}
  %w = sched.get @k : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.get' op names @missing, which is not a sched.param or sched.constant}}
  %w = sched.get @missing : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.get' op yields '!sched.buffer<8xf32>' but @w is '!sched.buffer<4xf32>'}}
  %w = sched.get @w : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.constant @c dense<1.0> : tensor<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.get' op yields '!sched.buffer<4xbf16>' but @c is '!sched.buffer<4xf32>'}}
  %c = sched.get @c : !sched.buffer<4xbf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.view' op offset 2 is not a non-negative multiple of 4 bytes}}
  %v = sched.view %x[2] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.view' op offset -4 is not a non-negative multiple of 4 bytes}}
  %v = sched.view %x[-4] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.view' op bytes [20, 36) lie outside the 32-byte source}}
  %v = sched.view %x[20] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.view' op bytes [0, 64) lie outside the 32-byte source}}
  %v = sched.view %x[0] : !sched.buffer<8xf32> to !sched.buffer<16xf32>
  sched.return []
}

// -----

// offset + size passes 2^63: the message must not print the wrapped end.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.view' op bytes [9223372036854775804, more than 2^63) lie outside the 32-byte source}}
  %v = sched.view %x[9223372036854775804] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.constant @c dense<1.0> : tensor<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.assign' op assigns @c, which is not a sched.param}}
  sched.assign @c = %x : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.assign' op assigns a '!sched.buffer<8xf32>' to @w of type '!sched.buffer<4xf32>'}}
  sched.assign @w = %x : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.return' op names 2 outputs but returns 1}}
  sched.return ["a", "b"] %x : !sched.buffer<4xf32>
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.return' op names output 'a' twice}}
  sched.return ["a", "a"] %x, %x : !sched.buffer<4xf32>, !sched.buffer<4xf32>
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.return' op split has 2 entries for 1 outputs}}
  sched.return ["a"] %x : !sched.buffer<4xf32> {split = [[], []]}
}

// -----

//===----------------------------------------------------------------------===//
// sched.program: attributes, inputs and contents
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'sched.program' op alignment 48 is not a power of two}}
sched.program @p arena(0) align(48) events(0) streams ["compute"] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op alignment 0 is not a power of two}}
sched.program @p arena(0) align(0) events(0) streams ["compute"] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op arena of -1 bytes}}
sched.program @p arena(-1) align(1) events(0) streams ["compute"] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op has -1 events}}
sched.program @p arena(0) align(1) events(-1) streams ["compute"] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op names stream 'compute' twice}}
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm", "compute"] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op has no streams}}
sched.program @p arena(0) align(1) events(0) streams [] {
  sched.return []
}

// -----

// expected-error @+1 {{'sched.program' op input 1 is not a !sched.buffer}}
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %n: i64):
  sched.return []
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.assign @w = %x : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op follows a sched.assign; assigns come after every instruction}}
  sched.fill %y value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'builtin.unrealized_conversion_cast' op cannot appear in a sched.program}}
  %c = builtin.unrealized_conversion_cast to i32
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.program: the memory plan
//===----------------------------------------------------------------------===//

sched.program @p arena(256) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op offset 32 is not a non-negative multiple of the program's 64-byte alignment}}
  %a = sched.alloc offset(32) live(0, 0) : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(256) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op offset -64 is not a non-negative multiple of the program's 64-byte alignment}}
  %a = sched.alloc offset(-64) live(0, 0) : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(128) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op bytes [64, 160) lie outside the 128-byte arena}}
  %a = sched.alloc offset(64) live(0, 0) : !sched.buffer<24xf32>
  sched.return []
}

// -----

// Larger than the whole arena: the check must not overflow on offset + size.
sched.program @p arena(16) align(1) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op bytes [0, 32) lie outside the 16-byte arena}}
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  sched.return []
}

// -----

// An offset near 2^63: the end, offset + size, does not fit in int64.
sched.program @p arena(128) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op bytes [9223372036854775744, more than 2^63) lie outside the 128-byte arena}}
  %a = sched.alloc offset(9223372036854775744) live(0, 0) : !sched.buffer<24xf32>
  sched.return []
}

// -----

sched.program @p arena(64) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op live range [1, 0] is not inside [0, 1]}}
  %a = sched.alloc offset(0) live(1, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(64) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op live range [0, 2] is not inside [0, 1]}}
  %a = sched.alloc offset(0) live(0, 2) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(64) align(64) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op live range [-1, 0] is not inside [0, 1]}}
  %a = sched.alloc offset(0) live(-1, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// Two buffers whose bytes overlap ([0, 32) and [0, 16)) and whose live
// ranges meet at instruction 1.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the other buffer}}
  %a = sched.alloc offset(0) live(0, 1) : !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.alloc' op shares bytes with a buffer live at the same time: [0, 16) live [1, 2] against [0, 32) live [0, 1]}}
  %b = sched.alloc offset(0) live(1, 2) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<8xf32>
  sched.fill %a value 1.0 : !sched.buffer<8xf32>
  sched.fill %b value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// Partial overlap at different offsets: [0, 32) and [16, 48).
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the other buffer}}
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.alloc' op shares bytes with a buffer live at the same time: [16, 48) live [0, 0] against [0, 32) live [0, 0]}}
  %b = sched.alloc offset(16) live(0, 0) : !sched.buffer<8xf32>
  sched.copy %a -> %b sizes [8] src [0, 1] dst [0, 1] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the buffer}}
  %a = sched.alloc offset(0) live(1, 1) : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op is instruction 0 but uses a buffer live only in [1, 1]}}
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.fill %a value 1.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// A view is used within the live range of the alloc it views.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the buffer}}
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  %v = sched.view %a[16] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.fill' op is instruction 1 but uses a buffer live only in [0, 0]}}
  sched.fill %v value 1.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.constant @c dense<1.0> : tensor<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %c = sched.get @c : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes constant @c}}
  sched.fill %c value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %w = sched.get @w : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes parameter @w; parameters change by sched.assign, or in place by a kernel launch (or the copy narrowing its result), an all_gather or an fp8_decode}}
  sched.fill %w value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// A gather may fill a state in place (weft-gather-per-step's); a sum may not.
sched.mesh @mesh axes ["dp"] sizes [2]
sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  %w = sched.get @w : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.collective' op writes parameter @w}}
  sched.collective all_reduce sum %x -> %w over @mesh ["dp"] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// A parameter written in place is not also assigned.
sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  %w = sched.get @w : !sched.buffer<4xf32>
  // expected-note @+1 {{the instruction}}
  sched.copy %x -> %w sizes [4] src [0, 1] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.assign' op assigns @w, which an instruction writes in place: a parameter changes by one or the other}}
  sched.assign @w = %x : <4xf32>
  sched.return []
}

// -----

sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the buffer}}
  %a = sched.alloc offset(0) live(0, 1) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.fill %a value 1.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.return' op reads a buffer after the last instruction, but its live range ends at 1 (the program has 2 instructions)}}
  sched.return ["a"] %a : !sched.buffer<4xf32>
}

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-note @+1 {{the buffer}}
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.assign' op reads a buffer after the last instruction, but its live range ends at 0 (the program has 1 instructions)}}
  sched.assign @w = %a : !sched.buffer<4xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.program: streams and events
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.fill' op runs on stream 'comm', which the program does not declare}}
  sched.fill %x value 0.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// -----

// Unnamed, an instruction is on "compute", which must then be declared.
sched.program @p arena(0) align(1) events(0) streams ["comm"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.fill' op runs on stream 'compute', which the program does not declare}}
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(1) streams ["compute"] {
  // expected-error @+1 {{'sched.record' op event 1 is outside the program's 1 events}}
  sched.record 1
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(1) streams ["compute"] {
  // expected-error @+1 {{'sched.record' op event -1 is outside the program's 1 events}}
  sched.record -1
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(2) streams ["compute", "comm"] {
  sched.record 0
  // expected-error @+1 {{'sched.wait' op event 2 is outside the program's 2 events}}
  sched.wait 2 on "comm"
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
  // expected-error @+1 {{'sched.wait' op event 0 is outside the program's 0 events}}
  sched.wait 0 on "comm"
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(1) streams ["compute", "comm"] {
  // expected-error @+1 {{'sched.wait' op waits for event 0 before any sched.record of it}}
  sched.wait 0 on "comm"
  sched.record 0
  sched.return []
}

// -----

// Read after write across streams.
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-note @+1 {{the other access}}
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.copy' op reads on stream 'comm' a buffer the instruction below writes on stream 'compute', with no event between}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// Write after write across streams.
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-note @+1 {{the other access}}
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes on stream 'comm' a buffer the instruction below accesses on stream 'compute', with no event between}}
  sched.fill %x value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// -----

// Write after read across streams.
sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-note @+1 {{the other access}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes on stream 'comm' a buffer the instruction below accesses on stream 'compute', with no event between}}
  sched.fill %x value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// -----

// A buffer reusing the bytes of one last accessed on another stream: %b's
// write on "comm" may run before %a's on "compute" has finished.
sched.program @p arena(64) align(16) events(0) streams ["compute", "comm"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  %b = sched.alloc offset(0) live(1, 1) : !sched.buffer<4xf32>
  // expected-note @+1 {{the other access}}
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes on stream 'comm' a buffer the instruction below accesses on stream 'compute', with no event between}}
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// -----

// The same through a view and with the buffers in the other order of offset.
sched.program @p arena(64) align(16) events(0) streams ["compute", "comm"] {
  %b = sched.alloc offset(16) live(1, 1) : !sched.buffer<4xf32>
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<8xf32>
  %v = sched.view %a[16] : !sched.buffer<8xf32> to !sched.buffer<4xf32>
  %y = sched.alloc offset(32) live(0, 1) : !sched.buffer<4xf32>
  // expected-note @+1 {{the other access}}
  sched.copy %v -> %y sizes [4] src [0, 1] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes on stream 'comm' a buffer the instruction below accesses on stream 'compute', with no event between}}
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

// -----

// A record before the write does not order the write.
sched.program @p arena(0) align(1) events(1) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.record 0
  // expected-note @+1 {{the other access}}
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.wait 0 on "comm"
  // expected-error @+1 {{'sched.copy' op reads on stream 'comm' a buffer the instruction below writes on stream 'compute', with no event between}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// The positive counterpart: each of the hazards above, ordered by an event,
// verifies (read after write, write after read, write after write, and a
// buffer reusing bytes last accessed on another stream).
sched.program @p arena(64) align(16) events(2) streams ["compute", "comm"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  %a = sched.alloc offset(0) live(0, 2) : !sched.buffer<4xf32>
  %b = sched.alloc offset(0) live(3, 12) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.record 0
  sched.wait 0 on "comm"
  sched.fill %b value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.fill %x value 0.0 : !sched.buffer<4xf32>
  sched.record 1
  sched.wait 1 on "comm"
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] on "comm" : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.record 0 on "comm"
  sched.wait 0
  sched.fill %x value 1.0 : !sched.buffer<4xf32>
  sched.fill %y value 1.0 : !sched.buffer<4xf32>
  sched.return ["b"] %b : !sched.buffer<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// sched.launch
//===----------------------------------------------------------------------===//

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op grid must be three sizes in [1, 2^31), not [1, 1]}}
  sched.launch @k grid [1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op grid must be three sizes in [1, 2^31), not [1, 0, 1]}}
  sched.launch @k grid [1, 0, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op grid must be three sizes in [1, 2^31), not [2147483648, 1, 1]}}
  sched.launch @k grid [2147483648, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op block of 1025 threads is outside [1, 1024]}}
  sched.launch @k grid [1, 1, 1] block 1025 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op block of 0 threads is outside [1, 1024]}}
  sched.launch @k grid [1, 1, 1] block 0 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

// A generated kernel loops over its first i64 scalar: it must be the first
// output's element count.
sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op scalar 0 (the element count) is 1099511627776 but the first output holds 4 elements}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars [1099511627776]
  sched.return []
}

// -----

sched.param @k init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op launches @k, which is not a sched.kernel}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op passes 1 inputs to @k, which takes 0}}
  sched.launch @k grid [1, 1, 1] block 32 ins(%y : !sched.buffer<4xf32>) outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [!sched.buffer<4xf32>] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xbf16>):
  // expected-error @+1 {{'sched.launch' op inputs 0 is '!sched.buffer<4xbf16>' but @k takes '!sched.buffer<4xf32>'}}
  sched.launch @k grid [1, 1, 1] block 32 ins(%y : !sched.buffer<4xbf16>) outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op passes 2 outputs to @k, which takes 1}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x, %y : !sched.buffer<4xf32>, !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x2xf32>):
  // expected-error @+1 {{'sched.launch' op outputs 0 is '!sched.buffer<2x2xf32>' but @k takes '!sched.buffer<4xf32>'}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<2x2xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op passes 0 scalars to @k, which takes 1}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars []
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64, f32]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op scalars 1 is 'f64' but @k takes 'f32'}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars [4, 1.0]
  sched.return []
}

// -----

sched.kernel @k inputs [] outputs [!sched.buffer<4xf32>] scalars [i64]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.launch' op scalar "four" is not an integer or float}}
  sched.launch @k grid [1, 1, 1] block 32 outs(%x : !sched.buffer<4xf32>) scalars ["four"]
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.gemm
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op mnk, ld and strides need three entries each}}
  sched.gemm %a, %b -> %c mnk [4, 4] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op sizes mnk [4, 0, 8] and batch 1 must be positive}}
  sched.gemm %a, %b -> %c mnk [4, 0, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op sizes mnk [4, 4, 8] and batch 0 must be positive}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 0 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op batch strides [0, -1, 0] must not be negative}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, -1, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op leading dimension 4 of A is less than its 8 columns}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [4, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

// With transpose_b, B is stored [n, k]: its rows have k = 8 columns.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<4x8xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op leading dimension 4 of B is less than its 8 columns}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none transpose_b : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op C needs 19 elements but its buffer holds 16}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 5] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

// Two batches at stride 32 need 64 elements of A.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op A needs 64 elements but its buffer holds 32}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 2 ld [8, 4, 4] strides [32, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

// m = 2^62 rows of A at leading dimension 8: the count A needs overflows
// int64 and must not wrap to a small number.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op A needs more than 2^63 elements but its buffer holds 32}}
  sched.gemm %a, %b -> %c mnk [4611686018427387904, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xi32>, %b: !sched.buffer<8x4xi32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op A must hold floats, not 'i32'}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xi32>, !sched.buffer<8x4xi32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xbf16>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op multiplies 'f32' by 'bf16'; A and B must have one type, or both be FP8}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xbf16> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf8E4M3FN>, %b: !sched.buffer<8x4xbf16>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op multiplies 'f8E4M3FN' by 'bf16'; A and B must have one type, or both be FP8}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<8x4xbf16> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf8E4M3FN>, %b: !sched.buffer<8x4xf8E5M2>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op FP8 operands need scales for A and B}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<8x4xf8E5M2> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.gemm' op takes scales only for FP8 operands}}
  sched.gemm %a, %b -> %c scales(%s, %s : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf8E4M3FN>, %b: !sched.buffer<8x4xf8E4M3FN>, %c: !sched.buffer<4x4xf32>, %s: !sched.buffer<1xf32>, %t: !sched.buffer<2xf32>):
  // expected-error @+1 {{'sched.gemm' op scale of B must be one f32, not '!sched.buffer<2xf32>'}}
  sched.gemm %a, %b -> %c scales(%s, %t : !sched.buffer<1xf32>, !sched.buffer<2xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue none : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<8x4xf8E4M3FN> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op epilogue 'bias' needs bias}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>, %bias: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.gemm' op epilogue 'gelu' takes no bias}}
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<4xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue gelu : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op epilogue 'dgelu' needs aux}}
  sched.gemm %a, %b -> %c mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue dgelu : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>, %bias: !sched.buffer<4xf32>, %aux: !sched.buffer<4x4xf32>):
  // expected-error @+1 {{'sched.gemm' op epilogue 'bias' takes no aux}}
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<4xf32>) aux(%aux : !sched.buffer<4x4xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>, %bias: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.gemm' op bias holds 8 elements, not n = 4}}
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<8xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x4xf32>, %c: !sched.buffer<4x4xf32>, %aux: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.gemm' op aux holds 8 elements, not batch * m * n = 16}}
  sched.gemm %a, %b -> %c aux(%aux : !sched.buffer<8xf32>) mnk [4, 4, 8] batch 1 ld [8, 4, 4] strides [0, 0, 0] epilogue dgelu : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32> -> !sched.buffer<4x4xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.attention, sched.attention_grad
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %t: !sched.buffer<f32>, %p: !sched.buffer<2xi32>):
  // expected-error @+1 {{'sched.attention' op dropout rate must be in [0, 1), got 1}}
  sched.attention %q, %q, %q -> %o, %lse scale 0.5 algorithm flash {dropout = 1.0, seed = 1} : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %t: !sched.buffer<f32>, %p: !sched.buffer<2xi32>):
  // expected-error @+1 {{'sched.attention' op dropout needs a seed}}
  sched.attention %q, %q, %q -> %o, %lse scale 0.5 algorithm flash {dropout = 0.1} : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %t: !sched.buffer<f32>, %p: !sched.buffer<2xi32>):
  // expected-error @+1 {{'sched.attention' op has a seed, step, micro-batch or split but no dropout}}
  sched.attention %q, %q, %q -> %o, %lse step(%t : !sched.buffer<f32>) scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %t: !sched.buffer<f32>, %p: !sched.buffer<2xi32>):
  // expected-error @+1 {{'sched.attention' op dropout's mask splits batch, heads and (with positions) the sequence, not dimension 1 of the query}}
  sched.attention %q, %q, %q -> %o, %lse scale 0.5 algorithm flash {dropout = 0.1, seed = 1, split = [[], ["dp"], [], []]} : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op q must have rank 4, has shape [1, 2, 2]}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xi32>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op k must hold floats, not 'i32'}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xi32>, !sched.buffer<1x3x1x4xi32> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x8xbf16>, %v: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op k has shape [1, 3, 1, 8], expected [1, 3, 1, 4]}}
  sched.attention %q, %k, %v -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x8xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %v: !sched.buffer<1x4x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op v has shape [1, 4, 1, 4], expected [1, 3, 1, 4]}}
  sched.attention %q, %k, %v -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x4x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

// out's last dimension is v's (8), not q's.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %v: !sched.buffer<1x3x1x8xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op out has shape [1, 2, 2, 4], expected [1, 2, 2, 8]}}
  sched.attention %q, %k, %v -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x8xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x3xf32>):
  // expected-error @+1 {{'sched.attention' op lse has shape [1, 2, 3], expected [1, 2, 2]}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x3xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x3x4xbf16>, %k: !sched.buffer<1x3x2x4xbf16>, %o: !sched.buffer<1x2x3x4xbf16>, %lse: !sched.buffer<1x3x2xf32>):
  // expected-error @+1 {{'sched.attention' op query heads 3 are not a multiple of key/value heads 2}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x3x4xbf16>, !sched.buffer<1x3x2x4xbf16>, !sched.buffer<1x3x2x4xbf16> -> !sched.buffer<1x2x3x4xbf16>, !sched.buffer<1x3x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x0x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>):
  // expected-error @+1 {{'sched.attention' op query heads 2 are not a multiple of key/value heads 0}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x0x4xbf16>, !sched.buffer<1x3x0x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xbf16>):
  // expected-error @+1 {{'sched.attention' op lse must hold f32}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xbf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %e: !sched.buffer<1x2x3xf32>):
  // expected-error @+1 {{'sched.attention' op entropy has shape [1, 2, 3], expected [1, 2, 2]}}
  sched.attention %q, %k, %k -> %o, %lse entropy(%e : !sched.buffer<1x2x3xf32>) scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %e: !sched.buffer<1x2x2xbf16>):
  // expected-error @+1 {{'sched.attention' op entropy must hold f32}}
  sched.attention %q, %k, %k -> %o, %lse entropy(%e : !sched.buffer<1x2x2xbf16>) scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %s: !sched.buffer<12xf32>):
  // expected-error @+1 {{'sched.attention' op algorithm 'flash' takes no scratch forward}}
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<12xf32>) scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

// Scores [B, Hq, S, T] = [1, 2, 4, 4]: f32 scores and f32 probabilities,
// 256 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>):
  // expected-error @+1 {{'sched.attention' op algorithm 'gemm_softmax' needs 256 bytes of scratch, has 0}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm gemm_softmax : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<63xf32>):
  // expected-error @+1 {{'sched.attention' op algorithm 'gemm_softmax' needs 256 bytes of scratch, has 252}}
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<63xf32>) scale 0.5 algorithm gemm_softmax : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>
  sched.return []
}

// -----

// cuBLASLt wants 16-byte rows: S = 2 bf16 elements is 4 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x8xbf16>, %k: !sched.buffer<1x8x1x8xbf16>, %o: !sched.buffer<1x2x2x8xbf16>, %lse: !sched.buffer<1x2x2xf32>, %s: !sched.buffer<1024xf32>):
  // expected-error @+1 {{'sched.attention' op algorithm 'gemm_softmax' needs S, T, D and Dv that make 16-byte rows, got [1, 2, 2, 8] and [1, 8, 1, 8]}}
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<1024xf32>) scale 0.5 algorithm gemm_softmax : !sched.buffer<1x2x2x8xbf16>, !sched.buffer<1x8x1x8xbf16>, !sched.buffer<1x8x1x8xbf16> -> !sched.buffer<1x2x2x8xbf16>, !sched.buffer<1x2x2xf32>
  sched.return []
}

// -----

// Zero-width heads let B, S, Hq and T be large enough that the scores
// overflow int64 while every buffer stays small.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<65536x65536x65536x0xbf16>, %k: !sched.buffer<65536x65536x1x0xbf16>, %o: !sched.buffer<65536x65536x65536x0xbf16>, %lse: !sched.buffer<65536x65536x65536xf32>):
  // expected-error @+1 {{'sched.attention' op algorithm 'gemm_softmax' needs more than 2^63 bytes of scratch, has 0}}
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm gemm_softmax : !sched.buffer<65536x65536x65536x0xbf16>, !sched.buffer<65536x65536x1x0xbf16>, !sched.buffer<65536x65536x1x0xbf16> -> !sched.buffer<65536x65536x65536x0xbf16>, !sched.buffer<65536x65536x65536xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %dq: !sched.buffer<1x2x2x4xf32>):
  // expected-error @+1 {{'sched.attention_grad' op dq is '!sched.buffer<1x2x2x4xf32>', not '!sched.buffer<1x2x2x4xbf16>'}}
  sched.attention_grad %q, %k, %k, %o, %lse, %o -> %dq, %k, %k scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>, !sched.buffer<1x2x2x4xbf16> -> !sched.buffer<1x2x2x4xf32>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x2x2x4xbf16>, %k: !sched.buffer<1x3x1x4xbf16>, %o: !sched.buffer<1x2x2x4xbf16>, %lse: !sched.buffer<1x2x2xf32>, %dout: !sched.buffer<2x2x4xbf16>):
  // expected-error @+1 {{'sched.attention_grad' op dout has shape [2, 2, 4], not out's [1, 2, 2, 4]}}
  sched.attention_grad %q, %k, %k, %o, %lse, %dout -> %q, %k, %k scale 0.5 algorithm flash : !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x2x2xf32>, !sched.buffer<2x2x4xbf16> -> !sched.buffer<1x2x2x4xbf16>, !sched.buffer<1x3x1x4xbf16>, !sched.buffer<1x3x1x4xbf16>
  sched.return []
}

// -----

// The backward keeps scores and probabilities (256 bytes) and the f32 row
// term delta [B, Hq, S] (32 bytes).
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<64xf32>, %dq: !sched.buffer<1x4x2x4xf32>, %dk: !sched.buffer<1x4x1x4xf32>, %dv: !sched.buffer<1x4x1x4xf32>):
  // expected-error @+1 {{'sched.attention_grad' op algorithm 'gemm_softmax' needs 288 bytes of scratch, has 256}}
  sched.attention_grad %q, %k, %k, %o, %lse, %o -> %dq, %dk, %dv scratch(%s : !sched.buffer<64xf32>) scale 0.5 algorithm gemm_softmax : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>, !sched.buffer<1x4x2x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>
  sched.return []
}

// -----

// A flash backward given scratch needs room for delta.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<4xf32>, %dq: !sched.buffer<1x4x2x4xf32>, %dk: !sched.buffer<1x4x1x4xf32>, %dv: !sched.buffer<1x4x1x4xf32>):
  // expected-error @+1 {{'sched.attention_grad' op algorithm 'flash' needs 32 bytes of scratch, has 16}}
  sched.attention_grad %q, %k, %k, %o, %lse, %o -> %dq, %dk, %dv scratch(%s : !sched.buffer<4xf32>) scale 0.5 algorithm flash : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>, !sched.buffer<1x4x2x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// Library kernels
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32xf32>, %ids: !sched.buffer<8xi32>, %o: !sched.buffer<8x16xf32>):
  // expected-error @+1 {{'sched.embedding' op table must have rank 2, has shape [32]}}
  sched.embedding %t, %ids, %o {vocab_axes = []} : !sched.buffer<32xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32x16xf32>, %ids: !sched.buffer<8xf32>, %o: !sched.buffer<8x16xf32>):
  // expected-error @+1 {{'sched.embedding' op ids must hold i32 or i64, not 'f32'}}
  sched.embedding %t, %ids, %o {vocab_axes = []} : !sched.buffer<32x16xf32>, !sched.buffer<8xf32>, !sched.buffer<8x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32x16xf32>, %ids: !sched.buffer<2x4xi64>, %o: !sched.buffer<8x16xf32>):
  // expected-error @+1 {{'sched.embedding' op out has shape [8, 16], expected [2, 4, 16]}}
  sched.embedding %t, %ids, %o {vocab_axes = []} : !sched.buffer<32x16xf32>, !sched.buffer<2x4xi64>, !sched.buffer<8x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32x16xf32>, %ids: !sched.buffer<8xi32>, %o: !sched.buffer<8x16xf32>):
  // expected-error @+1 {{'sched.embedding' op names mesh axes but the module has no sched.mesh}}
  sched.embedding %t, %ids, %o {vocab_axes = ["tp"]} : !sched.buffer<32x16xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%t: !sched.buffer<32x16xf32>, %ids: !sched.buffer<8xi32>, %o: !sched.buffer<8x16xf32>):
  // expected-error @+1 {{'sched.embedding' op mesh @mesh has no axis 'tp'}}
  sched.embedding %t, %ids, %o {vocab_axes = ["tp"]} : !sched.buffer<32x16xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xi32>, %d: !sched.buffer<8x16xf32>, %t: !sched.buffer<32x16x1xf32>):
  // expected-error @+1 {{'sched.embedding_grad' op dtable must have rank 2, has shape [32, 16, 1]}}
  sched.embedding_grad %ids, %d, %t {vocab_axes = []} : !sched.buffer<8xi32>, !sched.buffer<8x16xf32>, !sched.buffer<32x16x1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xbf16>, %d: !sched.buffer<8x16xf32>, %t: !sched.buffer<32x16xf32>):
  // expected-error @+1 {{'sched.embedding_grad' op ids must hold i32 or i64, not 'bf16'}}
  sched.embedding_grad %ids, %d, %t {vocab_axes = []} : !sched.buffer<8xbf16>, !sched.buffer<8x16xf32>, !sched.buffer<32x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xi32>, %d: !sched.buffer<8x8xf32>, %t: !sched.buffer<32x16xf32>):
  // expected-error @+1 {{'sched.embedding_grad' op dout has shape [8, 8], expected [8, 16]}}
  sched.embedding_grad %ids, %d, %t {vocab_axes = []} : !sched.buffer<8xi32>, !sched.buffer<8x8xf32>, !sched.buffer<32x16xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%ids: !sched.buffer<8xi32>, %d: !sched.buffer<8x16xf32>, %t: !sched.buffer<32x16xf32>):
  // expected-error @+1 {{'sched.embedding_grad' op names mesh axis 'tp' twice}}
  sched.embedding_grad %ids, %d, %t {vocab_axes = ["tp", "tp"]} : !sched.buffer<8xi32>, !sched.buffer<8x16xf32>, !sched.buffer<32x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x7xf32>):
  // expected-error @+1 {{'sched.rope' op rotates pairs: the last dimension of [4, 7] must be even}}
  sched.rope %x, %x {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<4x7xf32>, !sched.buffer<4x7xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>):
  // expected-error @+1 {{'sched.rope' op rotates pairs: the last dimension of [] must be even}}
  sched.rope %x, %x {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<f32>, !sched.buffer<f32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.rope' op theta must be positive}}
  sched.rope %x, %x {theta = 0.0, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

// NaN is not positive either.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.rope' op theta must be positive}}
  sched.rope %x, %x {theta = 0x7FF8000000000000 : f64, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8x4xf32>):
  // expected-error @+1 {{'sched.rope' op out has shape [8, 4], not input's [4, 8]}}
  sched.rope %x, %y {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op logits need a vocabulary dimension; they are 0-d}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<f32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xi32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op logits must hold floats, not 'i32'}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xi32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xf32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op labels must hold i32 or i64, not 'f32'}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xf32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<4xi32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op labels has shape [4], expected [8]}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<4xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<2xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op loss must be one f32, not '!sched.buffer<2xf32>'}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op names mesh axes but the module has no sched.mesh}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = ["tp"]} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xbf16>):
  // expected-error @+1 {{'sched.cross_entropy_grad' op dloss must be one f32, not '!sched.buffer<1xbf16>'}}
  sched.cross_entropy_grad %x, %l, %d, %x {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xbf16>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xf32>, %dx: !sched.buffer<8x2xf32>):
  // expected-error @+1 {{'sched.cross_entropy_grad' op dlogits has shape [8, 2], not logits's [8, 4]}}
  sched.cross_entropy_grad %x, %l, %d, %dx {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>, !sched.buffer<8x2xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy_grad' op mesh @mesh has no axis 'tp'}}
  sched.cross_entropy_grad %x, %l, %d, %x {ignore_index = -100, vocab_axes = ["tp"]} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.reduce' op needs a reduction: sum, max or mean}}
  sched.reduce none %x -> %y dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<f32>):
  // expected-error @+1 {{'sched.reduce' op dims [1, 0] must increase and lie inside rank 2}}
  sched.reduce sum %x -> %y dims [1, 0] : !sched.buffer<4x8xf32> -> !sched.buffer<f32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.reduce' op dims [2] must increase and lie inside rank 2}}
  sched.reduce max %x -> %y dims [2] : !sched.buffer<4x8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.reduce' op out has shape [4], expected [8]}}
  sched.reduce mean %x -> %y dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.softmax' op dim 2 is outside rank 2}}
  sched.softmax %x, %x {dim = 2} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.softmax' op dim -1 is outside rank 2}}
  sched.softmax %x, %x {dim = -1} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.softmax' op out has shape [32], not input's [4, 8]}}
  sched.softmax %x, %y {dim = 1} : !sched.buffer<4x8xf32>, !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.dropout' op rate 1.000000e+00 is outside [0, 1)}}
  sched.dropout %x, %x {rate = 1.0, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.dropout' op rate -1.000000e-01 is outside [0, 1)}}
  sched.dropout %x, %x {rate = -0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xbf16>, %z: !sched.buffer<8x4xbf16>):
  // expected-error @+1 {{'sched.dropout' op out has shape [8, 4], not input's [4, 8]}}
  sched.dropout %x, %z {rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<8x4xbf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>, %k: !sched.buffer<f32>):
  // expected-error @+1 {{'sched.dropout' op takes a microbatch operand exactly when it has microbatches}}
  sched.dropout %x, %y microbatch %k : !sched.buffer<f32> {rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>, %k: !sched.buffer<f32>):
  // expected-error @+1 {{'sched.dropout' op microbatches 0 must be at least 1 and cut dimension 0 of a tensor}}
  sched.dropout %x, %y microbatch %k : !sched.buffer<f32> {microbatches = 0, rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>, %k: !sched.buffer<2xf32>):
  // expected-error @+1 {{'sched.dropout' op microbatch must be one f32}}
  sched.dropout %x, %y microbatch %k : !sched.buffer<2xf32> {microbatches = 2, rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>, %p: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.dropout' op positions must be i32, one per element of dimension 1 of an input of rank 2 to 4}}
  sched.dropout %x, %y positions %p : !sched.buffer<8xf32> {rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.dropout' op split has 1 entries for a rank-2 input}}
  sched.dropout %x, %y {rate = 0.1, seed = 0, split = [["dp"]]} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.dropout' op mesh @mesh has no axis 'tp'}}
  sched.dropout %x, %y {rate = 0.1, seed = 0, split = [["dp"], ["tp"]]} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp", "tp", "pp", "ep"] sizes [2, 2, 2, 2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x2x2x2x2xf32>, %y: !sched.buffer<2x2x2x2x2xf32>):
  // expected-error @+1 {{'sched.dropout' op split cuts more than 3 dimensions after the first; a dropout mask's index takes 4}}
  sched.dropout %x, %y {rate = 0.1, seed = 0, split = [[], ["dp"], ["tp"], ["pp"], ["ep"]]} : !sched.buffer<2x2x2x2x2xf32>, !sched.buffer<2x2x2x2x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op epsilon must be positive}}
  sched.layer_norm_grad %x, %w, %x, %x, %w, %w {epsilon = 0.0} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>, %w: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op normalises the last dimension; input is 0-d}}
  sched.layer_norm_grad %x, %w, %x, %x, %w, %w {epsilon = 1.0e-5} : !sched.buffer<f32>, !sched.buffer<8xf32>, !sched.buffer<f32>, !sched.buffer<f32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op weight has shape [4], expected [8]}}
  sched.layer_norm_grad %x, %w, %x, %x, %w, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<4xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4xf32>, !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %d: !sched.buffer<2x8xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op dout has shape [2, 8], not input's [4, 8]}}
  sched.layer_norm_grad %x, %w, %d, %x, %w, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<2x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %d: !sched.buffer<2x8xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op dinput has shape [2, 8], not input's [4, 8]}}
  sched.layer_norm_grad %x, %w, %x, %d, %w, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<2x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %v: !sched.buffer<1x8xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op dweight has shape [1, 8], not weight's [8]}}
  sched.layer_norm_grad %x, %w, %x, %x, %v, %w {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<1x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %v: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op dbias has shape [4], not weight's [8]}}
  sched.layer_norm_grad %x, %w, %x, %x, %w, %v {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.rms_norm_grad' op epsilon must be positive}}
  sched.rms_norm_grad %x, %w, %x, %x, %w {epsilon = -1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %v: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.rms_norm_grad' op dweight has shape [4], not weight's [8]}}
  sched.rms_norm_grad %x, %w, %x, %x, %v {epsilon = 1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4xf32>, %o: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.one_hot' op indices must hold i32 or i64, not 'f32'}}
  sched.one_hot %i, %o : !sched.buffer<4xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<i64>, %o: !sched.buffer<f32>):
  // expected-error @+1 {{'sched.one_hot' op out must have a class dimension}}
  sched.one_hot %i, %o : !sched.buffer<i64>, !sched.buffer<f32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<3xi64>, %o: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.one_hot' op out has shape [4, 8], expected [3, 8]}}
  sched.one_hot %i, %o : !sched.buffer<3xi64>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x2xi64>):
  // expected-error @+1 {{'sched.topk' op k = 0 must lie in [1, 8]}}
  sched.topk %x, %v, %i {k = 0} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x9xf32>, %i: !sched.buffer<4x9xi64>):
  // expected-error @+1 {{'sched.topk' op k = 9 must lie in [1, 8]}}
  sched.topk %x, %v, %i {k = 9} : !sched.buffer<4x8xf32>, !sched.buffer<4x9xf32>, !sched.buffer<4x9xi64>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<f32>, %i: !sched.buffer<i64>):
  // expected-error @+1 {{'sched.topk' op k = 1 must lie in [1, 0]}}
  sched.topk %x, %x, %i {k = 1} : !sched.buffer<f32>, !sched.buffer<f32>, !sched.buffer<i64>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>):
  // expected-error @+1 {{'sched.topk' op indices must hold i32 or i64, not 'f32'}}
  sched.topk %x, %v, %v {k = 2} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x3xi32>):
  // expected-error @+1 {{'sched.topk' op indices has shape [4, 3], expected [4, 2]}}
  sched.topk %x, %v, %i {k = 2} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x3xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<2x4xf32>, %i: !sched.buffer<4x2xi32>):
  // expected-error @+1 {{'sched.topk' op values has shape [2, 4], expected [4, 2]}}
  sched.topk %x, %v, %i {k = 2} : !sched.buffer<4x8xf32>, !sched.buffer<2x4xf32>, !sched.buffer<4x2xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x4x8xf32>, %v: !sched.buffer<2x4x2xf32>, %i: !sched.buffer<2x4x2xi64>):
  // expected-error @+1 {{'sched.topk_gating' op logits must have rank 2, has shape [2, 4, 8]}}
  sched.topk_gating %x, %v, %i {k = 2, normalize = true} : !sched.buffer<2x4x8xf32>, !sched.buffer<2x4x2xf32>, !sched.buffer<2x4x2xi64>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %v: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x2xi64>):
  // expected-error @+1 {{'sched.topk_gating' op k = 16 must lie in [1, 8]}}
  sched.topk_gating %x, %v, %i {k = 16, normalize = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4x2xf32>, %p: !sched.buffer<4x2xi32>, %c: !sched.buffer<8xi32>):
  // expected-error @+1 {{'sched.expert_route' op indices must hold i32 or i64, not 'f32'}}
  sched.expert_route %i, %p, %c {capacity = 0, token_axes = []} : !sched.buffer<4x2xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4x2xi32>, %p: !sched.buffer<4x3xi32>, %c: !sched.buffer<8xi32>):
  // expected-error @+1 {{'sched.expert_route' op positions has shape [4, 3], not indices's [4, 2]}}
  sched.expert_route %i, %p, %c {capacity = 0, token_axes = []} : !sched.buffer<4x2xi32>, !sched.buffer<4x3xi32>, !sched.buffer<8xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4x2xi32>, %p: !sched.buffer<4x2xi32>, %c: !sched.buffer<8x1xi32>):
  // expected-error @+1 {{'sched.expert_route' op counts must have rank 1, has shape [8, 1]}}
  sched.expert_route %i, %p, %c {capacity = 0, token_axes = []} : !sched.buffer<4x2xi32>, !sched.buffer<4x2xi32>, !sched.buffer<8x1xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%i: !sched.buffer<4x2xi32>, %p: !sched.buffer<4x2xi32>, %c: !sched.buffer<8xi32>):
  // expected-error @+1 {{'sched.expert_route' op capacity -1 must be >= 0 (0: dropless)}}
  sched.expert_route %i, %p, %c {capacity = -1, token_axes = []} : !sched.buffer<4x2xi32>, !sched.buffer<4x2xi32>, !sched.buffer<8xi32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<32xf32>, %i: !sched.buffer<4x2xi32>, %o: !sched.buffer<8x8xf32>):
  // expected-error @+1 {{'sched.expert_dispatch' op input must have rank 2, has shape [32]}}
  sched.expert_dispatch %x, %i, %o : !sched.buffer<32xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %i: !sched.buffer<4x2xf32>, %o: !sched.buffer<8x8xf32>):
  // expected-error @+1 {{'sched.expert_dispatch' op positions must hold i32 or i64, not 'f32'}}
  sched.expert_dispatch %x, %i, %o : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<8x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %i: !sched.buffer<3x2xi32>, %o: !sched.buffer<8x8xf32>):
  // expected-error @+1 {{'sched.expert_dispatch' op positions route 3 tokens, not 4}}
  sched.expert_dispatch %x, %i, %o : !sched.buffer<4x8xf32>, !sched.buffer<3x2xi32>, !sched.buffer<8x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %i: !sched.buffer<4x2xi32>, %o: !sched.buffer<8x4xf32>):
  // expected-error @+1 {{'sched.expert_dispatch' op out rows have 4 elements, not 8}}
  sched.expert_dispatch %x, %i, %o : !sched.buffer<4x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%s: !sched.buffer<8x3x8xf32>, %w: !sched.buffer<4x2xf32>, %i: !sched.buffer<4x2xi32>, %o: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.expert_combine' op expert_outputs must have rank 2, has shape [8, 3, 8]}}
  sched.expert_combine %s, %w, %i, %o : !sched.buffer<8x3x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%s: !sched.buffer<8x8xf32>, %w: !sched.buffer<4x3xf32>, %i: !sched.buffer<4x2xi32>, %o: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.expert_combine' op weights has shape [4, 3], not positions's [4, 2]}}
  sched.expert_combine %s, %w, %i, %o : !sched.buffer<8x8xf32>, !sched.buffer<4x3xf32>, !sched.buffer<4x2xi32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%s: !sched.buffer<8x8xf32>, %i: !sched.buffer<4x2xi32>, %o: !sched.buffer<4x2x4xf32>):
  // expected-error @+1 {{'sched.expert_gather' op out has shape [4, 2, 4], expected [4, 2, 8]}}
  sched.expert_gather %s, %i, %o : !sched.buffer<8x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<4x2x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%p: !sched.buffer<4x2x8xf32>, %i: !sched.buffer<4x3xi32>, %o: !sched.buffer<8x8xf32>):
  // expected-error @+1 {{'sched.expert_scatter' op positions has shape [4, 3], expected [4, 2]}}
  sched.expert_scatter %p, %i, %o : !sched.buffer<4x2x8xf32>, !sched.buffer<4x3xi32>, !sched.buffer<8x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %w: !sched.buffer<2x5x6xf32>, %s: !sched.buffer<2xi32>, %o: !sched.buffer<8x6xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op weight [2, 5, 6] does not take input rows of 4 elements}}
  sched.grouped_matmul %x, %w, %s, %o {transpose_rhs = false} : !sched.buffer<8x4xf32>, !sched.buffer<2x5x6xf32>, !sched.buffer<2xi32>, !sched.buffer<8x6xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %w: !sched.buffer<2x4x6xf32>, %s: !sched.buffer<3xi32>, %o: !sched.buffer<8x6xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op the 2 experts do not divide the 3 groups}}
  sched.grouped_matmul %x, %w, %s, %o {transpose_rhs = false} : !sched.buffer<8x4xf32>, !sched.buffer<2x4x6xf32>, !sched.buffer<3xi32>, !sched.buffer<8x6xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %w: !sched.buffer<2x6x4xf32>, %s: !sched.buffer<2xf32>, %o: !sched.buffer<8x6xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op sizes must hold i32 or i64, not 'f32'}}
  sched.grouped_matmul %x, %w, %s, %o {transpose_rhs = true} : !sched.buffer<8x4xf32>, !sched.buffer<2x6x4xf32>, !sched.buffer<2xf32>, !sched.buffer<8x6xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %w: !sched.buffer<2x6x4xf32>, %s: !sched.buffer<2xi32>, %o: !sched.buffer<8x4xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op out has shape [8, 4], expected [8, 6]}}
  sched.grouped_matmul %x, %w, %s, %o {transpose_rhs = true} : !sched.buffer<8x4xf32>, !sched.buffer<2x6x4xf32>, !sched.buffer<2xi32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<8x4xf32>, %b: !sched.buffer<7x6xf32>, %s: !sched.buffer<2xi32>, %o: !sched.buffer<2x4x6xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op lhs has 8 rows, rhs 7}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o : !sched.buffer<8x4xf32>, !sched.buffer<7x6xf32>, !sched.buffer<2xi32>, !sched.buffer<2x4x6xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<8x4xf32>, %b: !sched.buffer<8x6xf32>, %s: !sched.buffer<2xi32>, %o: !sched.buffer<2x4x5xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op out has shape [2, 4, 5], expected [2, 4, 6]}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o : !sched.buffer<8x4xf32>, !sched.buffer<8x6xf32>, !sched.buffer<2xi32>, !sched.buffer<2x4x5xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.copy
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op src must be [offset, 1 strides], has 1 entries}}
  sched.copy %x -> %y sizes [4] src [0] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op dst must be [offset, 1 strides], has 3 entries}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op dst [0, -1] must not be negative}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, -1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op sizes [4, 0] must be positive}}
  sched.copy %x -> %y sizes [4, 0] src [0, 1, 1] dst [0, 1, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<8xbf16>):
  // expected-error @+1 {{'sched.copy' op src [1, 1] over sizes [4] reaches past the 4 elements of its buffer}}
  sched.copy %x -> %y sizes [4] src [1, 1] dst [0, 2] : !sched.buffer<4xf32> -> !sched.buffer<8xbf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<8xbf16>):
  // expected-error @+1 {{'sched.copy' op dst [0, 3] over sizes [4] reaches past the 8 elements of its buffer}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 3] : !sched.buffer<4xf32> -> !sched.buffer<8xbf16>
  sched.return []
}

// -----

// A stride so large that the last element's index overflows int64.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op src [0, 4611686018427387904] over sizes [4] reaches past the 4 elements of its buffer}}
  sched.copy %x -> %y sizes [4] src [0, 4611686018427387904] dst [0, 1] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op dst stride 0 along a dimension of size 4 writes one element several times}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 0] : !sched.buffer<4xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.collective
//===----------------------------------------------------------------------===//

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.collective' op all_reduce needs a reduction (sum, max, mean)}}
  sched.collective all_reduce none %x -> %x over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.collective' op all_gather takes reduction 'none'}}
  sched.collective all_gather sum %x -> %y over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<16xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<8xbf16>):
  // expected-error @+1 {{'sched.collective' op changes the element type from 'f32' to 'bf16'}}
  sched.collective all_reduce sum %x -> %y over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xbf16>
  sched.return []
}

// -----

sched.param @w init(zeros) : !sched.buffer<8xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.collective' op names mesh @w, which is not a sched.mesh}}
  sched.collective all_reduce sum %x -> %x over @w ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.collective' op mesh @mesh has no axis 'tp'}}
  sched.collective all_reduce sum %x -> %x over @mesh ["tp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.collective' op names mesh axis 'dp' twice}}
  sched.collective all_gather none %x -> %y over @mesh ["dp", "dp"] : !sched.buffer<8xf32> -> !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.collective' op all_reduce over a group of 2 from 8 elements needs an output of 8, not 4}}
  sched.collective all_reduce sum %x -> %y over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.collective' op all_gather over a group of 8 from 8 elements needs an output of 64, not 16}}
  sched.collective all_gather none %x -> %y over @mesh ["dp", "tp"] : !sched.buffer<8xf32> -> !sched.buffer<16xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<7xf32>, %y: !sched.buffer<3xf32>):
  // expected-error @+1 {{'sched.collective' op 7 elements do not split into 2 blocks}}
  sched.collective reduce_scatter sum %x -> %y over @mesh ["dp"] : !sched.buffer<7xf32> -> !sched.buffer<3xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.collective' op reduce_scatter over a group of 2 from 8 elements needs an output of 4, not 8}}
  sched.collective reduce_scatter mean %x -> %x over @mesh ["dp"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["ep"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.collective' op all_to_all over a group of 2 from 8 elements needs an output of 8, not 4}}
  sched.collective all_to_all none %x -> %y over @mesh ["ep"] : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.send, sched.recv
//===----------------------------------------------------------------------===//

sched.kernel @mesh inputs [] outputs [] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.send' op names mesh @mesh, which is not a sched.mesh}}
  sched.send %x to @mesh "pp" offset 1 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.send' op mesh @mesh has no axis 'pp'}}
  sched.send %x to @mesh "pp" offset 1 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.send' op peer offset 2 along 'pp' of size 2 is the rank itself}}
  sched.send %x to @mesh "pp" offset 2 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.send' op tag -1 is negative}}
  sched.send %x to @mesh "pp" offset 1 tag -1 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.param @mesh init(zeros) : !sched.buffer<8xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.recv' op names mesh @mesh, which is not a sched.mesh}}
  sched.recv %x from @mesh "pp" offset -1 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.recv' op mesh @mesh has no axis 'pp'}}
  sched.recv %x from @mesh "pp" offset -1 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["pp"] sizes [4]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.recv' op peer offset 0 along 'pp' of size 4 is the rank itself}}
  sched.recv %x from @mesh "pp" offset 0 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["pp"] sizes [4]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.recv' op peer offset -4 along 'pp' of size 4 is the rank itself}}
  sched.recv %x from @mesh "pp" offset -4 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.recv' op tag -3 is negative}}
  sched.recv %x from @mesh "pp" offset 1 tag -3 : !sched.buffer<8xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// Unplanned programs, input_split and by_rank copies
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'sched.program' op input_split has 1 entries for 2 inputs}}
sched.program @p align(1) events(0) streams ["compute"] attributes {input_split = [[[]]]} {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.return []
}

// -----

sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op needs an offset and a live range: the program is planned}}
  %a = sched.alloc : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.program @p align(16) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op has an offset, but the program has no arena: it is not planned}}
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// Only part of a plan: an offset without a live range.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  // expected-error @+1 {{'sched.alloc' op needs an offset and a live range: the program is planned}}
  %a = sched.alloc {offset = 0 : i64} : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

// -----

// An unplanned program still has its stream order checked.
sched.program @p align(16) events(0) streams ["compute", "comm"] {
  %a = sched.alloc : !sched.buffer<4xf32>
  // expected-note @+1 {{the other access}}
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.fill' op writes on stream 'comm' a buffer the instruction below accesses on stream 'compute', with no event between}}
  sched.fill %a value 1.0 on "comm" : !sched.buffer<4xf32>
  sched.return ["a"] %a : !sched.buffer<4xf32>
}

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op by_rank needs a mesh, axes and a step}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] {mesh = @mesh, rank_axes = ["tp"]} : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op by_rank step -4 is negative}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * -4) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.param @mesh init(zeros) : !sched.buffer<8xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op names mesh @mesh, which is not a sched.mesh}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * 4) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op mesh @mesh has no axis 'tp'}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * 4) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// (3 - 1) * 2^62 does not fit in int64.
sched.mesh @mesh axes ["tp"] sizes [3]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op by_rank offsets overflow}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * 4611686018427387904) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// The last of the 4 ranks reads from 3 * 4 = 12: past the 8 elements.
sched.mesh @mesh axes ["tp"] sizes [4]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.copy' op src [0, 1] over sizes [4] on the group's last rank reaches past the 8 elements of its buffer}}
  sched.copy %x -> %y sizes [4] src [0, 1] dst [0, 1] by_rank(@mesh ["tp"] * 4) : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

// Checks added after review: each once broke or let bad input through.

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // An axis without its coordinate is refused before the coordinate is read.
  // expected-error @+1 {{'sched.sequence' op needs both an axis and a coordinate}}
  sched.sequence attributes {axis = "pp"} {
    sched.run @p microbatch(0)
  }
}

// -----

// The logits' labels drop the vocabulary dimension.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x4x16xf32>, %l: !sched.buffer<2x8xi32>, %loss: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op labels has shape [2, 8], expected [2, 4]}}
  sched.cross_entropy %x, %l, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<2x4x16xf32>, !sched.buffer<2x8xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

// batch * m * n wraps to 0 in int64: the aux size check must not.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<65536x1xf32>, %b: !sched.buffer<1x65536xf32>, %c: !sched.buffer<65536x65536xf32>, %bias: !sched.buffer<65536xf32>, %aux: !sched.buffer<0xf32>):
  // expected-error @+1 {{'sched.gemm' op aux holds 0 elements, not batch * m * n = more than 2^63}}
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<65536xf32>) aux(%aux : !sched.buffer<0xf32>) mnk [65536, 65536, 1] batch 4294967296 ld [1, 65536, 65536] strides [0, 0, 0] epilogue bias_gelu : !sched.buffer<65536x1xf32>, !sched.buffer<1x65536xf32> -> !sched.buffer<65536x65536xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<4x8xf32>, %b: !sched.buffer<8x8xf32>, %c: !sched.buffer<4x8xf32>, %bias: !sched.buffer<8xi32>):
  // expected-error @+1 {{'sched.gemm' op bias must hold floats, not 'i32'}}
  sched.gemm %a, %b -> %c bias(%bias : !sched.buffer<8xi32>) mnk [4, 8, 8] batch 1 ld [8, 8, 8] strides [0, 0, 0] epilogue bias : !sched.buffer<4x8xf32>, !sched.buffer<8x8xf32> -> !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["dp"] sizes [8]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2305843009213693952xf8E4M3FN>, %y: !sched.buffer<0xf8E4M3FN>):
  // expected-error @+1 {{'sched.collective' op gathers more than 2^63 elements}}
  sched.collective all_gather none %x -> %y over @mesh ["dp"] : !sched.buffer<2305843009213693952xf8E4M3FN> -> !sched.buffer<0xf8E4M3FN>
  sched.return []
}

// -----

// A mesh whose rank count would overflow (or pass 2^30) is refused at the
// mesh, before any group is counted from it.
// expected-error @+1 {{'sched.mesh' op has too many ranks: the product of its sizes is above 2^30}}
sched.mesh @mesh axes ["a", "b"] sizes [4294967296, 4294967296]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.collective all_reduce sum %x -> %x over @mesh ["a", "b"] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(1) streams ["compute", "comm"] {
  sched.record 0 on "comm"
  // expected-error @+1 {{'sched.wait' op waits on stream 'comm' for event 0, which that stream recorded}}
  sched.wait 0 on "comm"
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x8xf32>, %k: !sched.buffer<1x4x2x8xf32>, %o: !sched.buffer<1x4x2x8xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<64xbf16>):
  // expected-error @+1 {{'sched.attention' op scratch must hold f32, not 'bf16'}}
  sched.attention %q, %k, %k -> %o, %lse scratch(%s : !sched.buffer<64xbf16>) scale 1.0 algorithm gemm_softmax : !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x4x2x8xf32> -> !sched.buffer<1x4x2x8xf32>, !sched.buffer<1x2x4xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["tp"] sizes [2]
// expected-error @+1 {{'sched.param' op split uses mesh axis 'tp' for two dimensions}}
sched.param @w init(zeros) {split = [["tp"], ["tp"]]} : !sched.buffer<4x4xf32>

// -----

sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.assign @w = %x : !sched.buffer<4xf32>
  // expected-error @+1 {{'sched.assign' op assigns @w a second time}}
  sched.assign @w = %x : !sched.buffer<4xf32>
  sched.return []
}

// -----

// An instruction's outputs do not overlap its other operands.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.dropout' op writes operand 1 over the bytes of operand 0: an instruction's outputs must not overlap its other operands}}
  sched.dropout %x, %x {rate = 0.1, seed = 1} : !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

// Overlapping views of one buffer count too.
sched.program @p arena(64) align(1) events(0) streams ["compute"] {
  %a = sched.alloc offset(0) live(0, 0) : !sched.buffer<16xf32>
  %lo = sched.view %a[0] : !sched.buffer<16xf32> to !sched.buffer<8xf32>
  %mid = sched.view %a[16] : !sched.buffer<16xf32> to !sched.buffer<8xf32>
  // expected-error @+1 {{'sched.copy' op writes operand 1 over the bytes of operand 0}}
  sched.copy %lo -> %mid sizes [8] src [0, 1] dst [0, 1] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

// Batches of a GEMM write disjoint blocks of C.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<2x4x16xf32>, %b: !sched.buffer<16x16xf32>, %c: !sched.buffer<4x16xf32>):
  // expected-error @+1 {{'sched.gemm' op batch stride 0 of C makes batches overlap (each batch writes 64 elements)}}
  sched.gemm %a, %b -> %c mnk [4, 16, 16] batch 2 ld [16, 16, 16] strides [64, 0, 0] epilogue none : !sched.buffer<2x4x16xf32>, !sched.buffer<16x16xf32> -> !sched.buffer<4x16xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// Library kernels' GPU scratch (dialects/sched/IR/ScratchLayout.h)
//===----------------------------------------------------------------------===//

// A reduction of 4 x 8 over dimension 0: f64 partials of 8 outputs in one
// chunk, 64 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8xf32>, %s: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.reduce' op needs 64 bytes of scratch, has 32}}
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<8xf32>) dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

// A whole-tensor sum of 2^19 elements runs in 128 chunks: 128 f64
// partials of its one output.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<65536x8xf32>, %y: !sched.buffer<f32>, %s: !sched.buffer<128xf32>):
  // expected-error @+1 {{'sched.reduce' op needs 1024 bytes of scratch, has 512}}
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<128xf32>) dims [0, 1] : !sched.buffer<65536x8xf32> -> !sched.buffer<f32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8xf32>, %s: !sched.buffer<16xi32>):
  // expected-error @+1 {{'sched.reduce' op scratch must hold f32, not 'i32'}}
  sched.reduce max %x -> %y scratch(%s : !sched.buffer<16xi32>) dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

// Norm gradients over 4 rows of 8: f64 row statistics (64 bytes, aligned
// to 256), then f64 column partials of dweight and dbias (128 bytes).
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %dx: !sched.buffer<4x8xf32>, %dw: !sched.buffer<8xf32>, %db: !sched.buffer<8xf32>, %s: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.layer_norm_grad' op needs 384 bytes of scratch, has 256}}
  sched.layer_norm_grad %x, %w, %x, %dx, %dw, %db scratch(%s : !sched.buffer<64xf32>) {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %dx: !sched.buffer<4x8xf32>, %dw: !sched.buffer<8xf32>, %s: !sched.buffer<192xbf16>):
  // expected-error @+1 {{'sched.rms_norm_grad' op scratch must hold f32, not 'bf16'}}
  sched.rms_norm_grad %x, %w, %x, %dx, %dw scratch(%s : !sched.buffer<192xbf16>) {epsilon = 1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %w: !sched.buffer<8xf32>, %dx: !sched.buffer<4x8xf32>, %dw: !sched.buffer<8xf32>, %s: !sched.buffer<95xf32>):
  // expected-error @+1 {{'sched.rms_norm_grad' op needs 384 bytes of scratch, has 380}}
  sched.rms_norm_grad %x, %w, %x, %dx, %dw scratch(%s : !sched.buffer<95xf32>) {epsilon = 1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.return []
}

// -----

// Cross-entropy over 8 positions: f32 statistics [3, 8] (96 bytes, aligned
// to 256), then the f64 count of positions not ignored.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %loss: !sched.buffer<1xf32>, %s: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.cross_entropy' op needs 264 bytes of scratch, has 256}}
  sched.cross_entropy %x, %l, %loss scratch(%s : !sched.buffer<64xf32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xf32>, %dx: !sched.buffer<8x4xf32>, %s: !sched.buffer<66xi32>):
  // expected-error @+1 {{'sched.cross_entropy_grad' op scratch must hold f32, not 'i32'}}
  sched.cross_entropy_grad %x, %l, %d, %dx scratch(%s : !sched.buffer<66xi32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8x4xf32>, %l: !sched.buffer<8xi32>, %d: !sched.buffer<1xf32>, %dx: !sched.buffer<8x4xf32>, %s: !sched.buffer<65xf32>):
  // expected-error @+1 {{'sched.cross_entropy_grad' op needs 264 bytes of scratch, has 260}}
  sched.cross_entropy_grad %x, %l, %d, %dx scratch(%s : !sched.buffer<65xf32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x4xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>, !sched.buffer<8x4xf32>
  sched.return []
}

// -----

// 2^60 outputs take 2^63 bytes of partials: more than int64 holds.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<1152921504606846976xf32>, %y: !sched.buffer<1152921504606846976xf32>, %s: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.reduce' op needs more than 2^63 bytes of scratch, has 16}}
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<4xf32>) dims [] : !sched.buffer<1152921504606846976xf32> -> !sched.buffer<1152921504606846976xf32>
  sched.return []
}

// -----

//===----------------------------------------------------------------------===//
// sched.ring_shift
//===----------------------------------------------------------------------===//

sched.mesh @mesh axes ["cp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.ring_shift' op output '!sched.buffer<4xf32>' is not input's '!sched.buffer<8xf32>'}}
  sched.ring_shift %x -> %y over @mesh "cp" offset 1 tag 0 : !sched.buffer<8xf32> -> !sched.buffer<4xf32>
  sched.return []
}

// -----

sched.mesh @mesh axes ["cp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %y: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.ring_shift' op peer offset 4 along 'cp' of size 2 is the rank itself}}
  sched.ring_shift %x -> %y over @mesh "cp" offset 4 tag 0 : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<4x1xf32>):
  // expected-error @+1 {{'sched.fp8_quantize' op format must be f8e4m3fn or f8e5m2, got 'bf16'}}
  sched.fp8_quantize %x, %a, %x {format = "bf16"} : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<4x3xf32>):
  // expected-error @+1 {{'sched.fp8_quantize' op block maxima [4, 3] do not divide [4, 8]}}
  sched.fp8_quantize %x, %a, %x {format = "f8e4m3fn"} : !sched.buffer<4x8xf32>, !sched.buffer<4x3xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf16>, %a: !sched.buffer<1xf32>, %q: !sched.buffer<4x8xf8E4M3FN>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op input must hold f32 or bf16, not 'f16'}}
  sched.fp8_cast %x, %a, %q, %s : !sched.buffer<4x8xf16>, !sched.buffer<1xf32>, !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<1xf32>, %q: !sched.buffer<4x8xf32>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op out must hold f8E4M3FN or f8E5M2, not 'f32'}}
  sched.fp8_cast %x, %a, %q, %s : !sched.buffer<4x8xf32>, !sched.buffer<1xf32>, !sched.buffer<4x8xf32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<4x1xf32>, %q: !sched.buffer<4x8xf8E4M3FN>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op amax must be one f32 (a per-tensor scale), not '!sched.buffer<4x1xf32>'}}
  sched.fp8_cast %x, %a, %q, %s : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<1xf32>, %q: !sched.buffer<4x8xf8E4M3FN>, %s: !sched.buffer<2xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op scale_inv must be one f32, not '!sched.buffer<2xf32>'}}
  sched.fp8_cast %x, %a, %q, %s : !sched.buffer<4x8xf32>, !sched.buffer<1xf32>, !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<2xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf16>, %a: !sched.buffer<1x1xf32>, %q: !sched.buffer<4x8xf8E4M3FN>):
  // expected-error @+1 {{'sched.fp8_encode' op input must hold f32 or bf16}}
  sched.fp8_encode %x, %a, %q : !sched.buffer<4x8xf16>, !sched.buffer<1x1xf32>, !sched.buffer<4x8xf8E4M3FN>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<1x1xf32>, %q: !sched.buffer<4x8xf16>):
  // expected-error @+1 {{'sched.fp8_encode' op out must hold f8E4M3FN or f8E5M2}}
  sched.fp8_encode %x, %a, %q : !sched.buffer<4x8xf32>, !sched.buffer<1x1xf32>, !sched.buffer<4x8xf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<4x3xf32>, %q: !sched.buffer<4x8xf8E4M3FN>):
  // expected-error @+1 {{'sched.fp8_encode' op block maxima [4, 3] do not divide [4, 8]}}
  sched.fp8_encode %x, %a, %q : !sched.buffer<4x8xf32>, !sched.buffer<4x3xf32>, !sched.buffer<4x8xf8E4M3FN>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<4x8xf32>, %a: !sched.buffer<1x1xf32>, %x: !sched.buffer<4x8xf32>):
  // expected-error @+1 {{'sched.fp8_decode' op input must hold f8E4M3FN or f8E5M2}}
  sched.fp8_decode %q, %a, %x : !sched.buffer<4x8xf32>, !sched.buffer<1x1xf32>, !sched.buffer<4x8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<8x8xf8E5M2>, %a: !sched.buffer<2x1xf32>, %x: !sched.buffer<8x8xf16>):
  // expected-error @+1 {{'sched.fp8_decode' op out must hold f32 or bf16}}
  sched.fp8_decode %q, %a, %x : !sched.buffer<8x8xf8E5M2>, !sched.buffer<2x1xf32>, !sched.buffer<8x8xf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<8x8xf8E5M2>, %a: !sched.buffer<2x1xf32>, %x: !sched.buffer<4x16xf32>):
  // expected-error @+1 {{'sched.fp8_decode' op out has shape [4, 16], not input's [8, 8]}}
  sched.fp8_decode %q, %a, %x : !sched.buffer<8x8xf8E5M2>, !sched.buffer<2x1xf32>, !sched.buffer<4x16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<1xf32>, %q: !sched.buffer<4x8xf8E4M3FN>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op out must have shape [8, 4] (input's, transposed), not [4, 8]}}
  sched.fp8_cast %x, %a, %q, %s {transpose} : !sched.buffer<4x8xf32>, !sched.buffer<1xf32>, !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>, %a: !sched.buffer<1xf32>, %q: !sched.buffer<8xf8E5M2>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op transposes the last two dimensions; input has rank 1}}
  sched.fp8_cast %x, %a, %q, %s {transpose} : !sched.buffer<8xf32>, !sched.buffer<1xf32>, !sched.buffer<8xf8E5M2>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.fp8_amax' op block maxima [32] need the rank of [4, 8]}}
  sched.fp8_amax %x, %a : !sched.buffer<4x8xf32>, !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x256xf32>, %a: !sched.buffer<16x2xf32>, %q: !sched.buffer<16x256xf8E4M3FN>, %s: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op scale mode 'tiles' is not tensor, rows, vec128, blk128 or vec32}}
  sched.fp8_cast %x, %a, %q, %s {scale_mode = "tiles"} : !sched.buffer<16x256xf32>, !sched.buffer<16x2xf32>, !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x256xf32>, %a: !sched.buffer<16x2xf32>, %q: !sched.buffer<16x256xf8E4M3FN>, %s: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op blocks 1 x 128 of 16 x 256 are not scale mode 'rows''s}}
  sched.fp8_cast %x, %a, %q, %s {scale_mode = "rows"} : !sched.buffer<16x256xf32>, !sched.buffer<16x2xf32>, !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x256xf32>, %a: !sched.buffer<16x2xf32>, %q: !sched.buffer<16x256xf8E4M3FN>, %s: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op scale_inv must hold 32 f32 (vec128 of 16 x 256), not '!sched.buffer<16xf32>'}}
  sched.fp8_cast %x, %a, %q, %s {scale_mode = "vec128"} : !sched.buffer<16x256xf32>, !sched.buffer<16x2xf32>, !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x16x256xf32>, %a: !sched.buffer<1x1x2xf32>, %q: !sched.buffer<2x256x16xf8E4M3FN>, %s: !sched.buffer<8xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op a block-scaled transposing cast needs blocks inside one matrix; 32-row blocks cut [2, 16, 256]}}
  sched.fp8_cast %x, %a, %q, %s {transpose, scale_mode = "blk128"} : !sched.buffer<2x16x256xf32>, !sched.buffer<1x1x2xf32>, !sched.buffer<2x256x16xf8E4M3FN>, !sched.buffer<8xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x256xf8E4M3FN>, %b: !sched.buffer<128x256xf8E4M3FN>, %c: !sched.buffer<16x128xf32>, %sa: !sched.buffer<16xf32>, %sb: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.gemm' op no GEMM scales a rows A by a blk128 B}}
  sched.gemm %a, %b -> %c scales(%sa, %sb : !sched.buffer<16xf32>, !sched.buffer<4xf32>) mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["rows", "blk128"]} : <16x256xf8E4M3FN>, <128x256xf8E4M3FN> -> <16x128xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x256xf8E4M3FN>, %b: !sched.buffer<256x128xf8E4M3FN>, %c: !sched.buffer<16x128xf32>, %sa: !sched.buffer<16xf32>, %sb: !sched.buffer<128xf32>):
  // expected-error @+1 {{'sched.gemm' op block scales read one A [m, k] and B [n, k] (transpose_b, not transpose_a, batch 1)}}
  sched.gemm %a, %b -> %c scales(%sa, %sb : !sched.buffer<16xf32>, !sched.buffer<128xf32>) mnk [16, 128, 256] batch 1 ld [256, 128, 128] strides [0, 0, 0] epilogue none {scale_modes = ["rows", "rows"]} : <16x256xf8E4M3FN>, <256x128xf8E4M3FN> -> <16x128xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x256xf8E4M3FN>, %b: !sched.buffer<128x256xf8E4M3FN>, %c: !sched.buffer<16x128xf32>, %sa: !sched.buffer<16xf32>, %sb: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.gemm' op scale of B must hold 128 f32 (rows of 128 x 256), not '!sched.buffer<4xf32>'}}
  sched.gemm %a, %b -> %c scales(%sa, %sb : !sched.buffer<16xf32>, !sched.buffer<4xf32>) mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["rows", "rows"]} : <16x256xf8E4M3FN>, <128x256xf8E4M3FN> -> <16x128xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x48xf8E4M3FN>, %b: !sched.buffer<32x48xf8E4M3FN>, %c: !sched.buffer<16x32xf32>, %sa: !sched.buffer<16xf32>, %sb: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.gemm' op 32-element blocks need k a multiple of 32, not 48}}
  sched.gemm %a, %b -> %c scales(%sa, %sb : !sched.buffer<16xf32>, !sched.buffer<32xf32>) mnk [16, 32, 48] batch 1 ld [48, 48, 32] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["vec32", "vec32"]} : <16x48xf8E4M3FN>, <32x48xf8E4M3FN> -> <16x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x256xf8E4M3FN>, %b: !sched.buffer<128x256xf8E4M3FN>, %c: !sched.buffer<16x128xf32>, %sa: !sched.buffer<128xf32>, %sb: !sched.buffer<256xf32>):
  // expected-error @+1 {{'sched.gemm' op no GEMM scales a vec32 A by a vec128 B}}
  sched.gemm %a, %b -> %c scales(%sa, %sb : !sched.buffer<128xf32>, !sched.buffer<256xf32>) mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["vec32", "vec128"]} : <16x256xf8E4M3FN>, <128x256xf8E4M3FN> -> <16x128xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x64xf32>, %a: !sched.buffer<16x1xf32>, %q: !sched.buffer<16x64xf8E4M3FN>, %s: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op blocks 1 x 64 of 16 x 64 are not scale mode 'vec32''s}}
  sched.fp8_cast %x, %a, %q, %s {pow2_scales, scale_mode = "vec32"} : !sched.buffer<16x64xf32>, !sched.buffer<16x1xf32>, !sched.buffer<16x64xf8E4M3FN>, !sched.buffer<32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<16x256xf32>, %b: !sched.buffer<128x256xf32>, %c: !sched.buffer<16x128xf32>):
  // expected-error @+1 {{'sched.gemm' op takes scale_modes only with FP8 scales}}
  sched.gemm %a, %b -> %c mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["rows", "rows"]} : <16x256xf32>, <128x256xf32> -> <16x128xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E4M3FN>, %w: !sched.buffer<2x32x64xf32>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op multiplies 'f8E4M3FN' by 'f32'; input and weight must have one type, or both be FP8}}
  sched.grouped_matmul %x, %w, %n, %y {transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf32>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E4M3FN>, %w: !sched.buffer<2x32x64xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op FP8 operands need scales for input and weight}}
  sched.grouped_matmul %x, %w, %n, %y {transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf32>, %w: !sched.buffer<2x32x64xf32>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op takes scales only for FP8 operands}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<64xf32>) {transpose_rhs = true} : !sched.buffer<64x64xf32>, !sched.buffer<2x32x64xf32>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf32>, %w: !sched.buffer<2x32x64xf32>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op takes scale_modes only with FP8 scales}}
  sched.grouped_matmul %x, %w, %n, %y {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x64xf32>, !sched.buffer<2x32x64xf32>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E5M2>, %w: !sched.buffer<2x32x64xf8E5M2>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<64xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x64xf8E5M2>, !sched.buffer<2x32x64xf8E5M2>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E4M3FN>, %w: !sched.buffer<2x64x32xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<128xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op FP8 operands need transpose_rhs (k contiguous in the weight [E, M, K])}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<128xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = false} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x64x32xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x48xf8E4M3FN>, %w: !sched.buffer<2x32x48xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op FP8 operands need k a positive multiple of 32, not 48}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<64xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x48xf8E4M3FN>, !sched.buffer<2x32x48xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x128xf8E4M3FN>, %w: !sched.buffer<2x64x128xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x64xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<4xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op 128 x 128 weight blocks need each expert's 64 rows a multiple of 128}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<4xf32>) {scale_modes = ["vec128", "blk128"], transpose_rhs = true} : !sched.buffer<64x128xf8E4M3FN>, !sched.buffer<2x64x128xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x64xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E4M3FN>, %w: !sched.buffer<2x32x64xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<128xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op no GEMM scales a rows input by a vec32 weight}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<128xf32>) {scale_modes = ["rows", "vec32"], transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf8E4M3FN>, %w: !sched.buffer<2x32x64xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<32xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op scale of weight must hold 64 f32 (rows of 64 x 64), not '!sched.buffer<32xf32>'}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<32xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x0xf8E4M3FN>, %w: !sched.buffer<2x32x0xf8E4M3FN>, %n: !sched.buffer<2xi32>, %y: !sched.buffer<64x32xf32>, %sx: !sched.buffer<64xf32>, %sw: !sched.buffer<64xf32>):
  // expected-error @+1 {{'sched.grouped_matmul' op FP8 operands need k a positive multiple of 32, not 0}}
  sched.grouped_matmul %x, %w, %n, %y scales(%sx, %sw : !sched.buffer<64xf32>, !sched.buffer<64xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x0xf8E4M3FN>, !sched.buffer<2x32x0xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2x0x64xf32>, %a: !sched.buffer<2x1x2xf32>, %q: !sched.buffer<2x64x0xf8E4M3FN>, %s: !sched.buffer<0xf32>):
  // expected-error @+1 {{'sched.fp8_cast' op a block-scaled transposing cast needs blocks inside one matrix; 0-row blocks cut [2, 0, 64]}}
  sched.fp8_cast %x, %a, %q, %s {transpose, scale_mode = "rows"} : !sched.buffer<2x0x64xf32>, !sched.buffer<2x1x2xf32>, !sched.buffer<2x64x0xf8E4M3FN>, !sched.buffer<0xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %q: !sched.buffer<64x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_quantize' op tile_rows must be 0 (all of an expert's rows) or a positive multiple of 32, not 48}}
  sched.fp8_group_quantize %x, %s, %q {experts = 2 : i64, format = "f8e4m3fn", tile_rows = 48 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %q: !sched.buffer<64x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_quantize' op the 3 experts do not divide the 4 groups}}
  sched.fp8_group_quantize %x, %s, %q {experts = 3 : i64, format = "f8e4m3fn", tile_rows = 0 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %q: !sched.buffer<64x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_quantize' op format must be f8e4m3fn or f8e5m2, got 'f16'}}
  sched.fp8_group_quantize %x, %s, %q {experts = 2 : i64, format = "f16", tile_rows = 0 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xbf16>, %s: !sched.buffer<4xi32>, %c: !sched.buffer<96x64xf8E4M3FN>, %si: !sched.buffer<4x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_cast' op input must hold f32, not 'bf16'}}
  sched.fp8_group_cast %x, %s, %c, %si {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xbf16>, !sched.buffer<4xi32>, !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<4x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %c: !sched.buffer<64x96xf8E4M3FN>, %si: !sched.buffer<4x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_cast' op out has shape [64, 96], expected [96, 64]}}
  sched.fp8_group_cast %x, %s, %c, %si {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf8E4M3FN>, !sched.buffer<4x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %c: !sched.buffer<96x64xf32>, %si: !sched.buffer<4x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_cast' op out must hold f8E4M3FN or f8E5M2, not 'f32'}}
  sched.fp8_group_cast %x, %s, %c, %si {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<96x64xf32>, !sched.buffer<4x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %s: !sched.buffer<4xi32>, %c: !sched.buffer<96x64xf8E4M3FN>, %si: !sched.buffer<3x96xf32>):
  // expected-error @+1 {{'sched.fp8_group_cast' op scale of out must be f32 [4, 96] (a scale per tile of an expert's rows and column), not '!sched.buffer<3x96xf32>'}}
  sched.fp8_group_cast %x, %s, %c, %si {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<3x96xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E4M3FN>, %b: !sched.buffer<48x64xf8E4M3FN>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>, %sa: !sched.buffer<4x96xf32>, %sb: !sched.buffer<4x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op FP8 operands need tile_rows}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o scales(%sa, %sb : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E4M3FN>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<64x96xf32>, %b: !sched.buffer<64x48xf32>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op takes tile_rows only with FP8 operands}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o {tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<64x48xf32>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E4M3FN>, %b: !sched.buffer<48x64xf8E4M3FN>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op FP8 operands need scales for lhs and rhs}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E4M3FN>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E5M2>, %b: !sched.buffer<48x64xf8E5M2>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>, %sa: !sched.buffer<4x96xf32>, %sb: !sched.buffer<4x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o scales(%sa, %sb : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E5M2>, !sched.buffer<48x64xf8E5M2>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E4M3FN>, %b: !sched.buffer<48x60xf8E4M3FN>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>, %sa: !sched.buffer<4x96xf32>, %sb: !sched.buffer<4x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op lhs has 64 rows, rhs 60 (FP8 operands transposed)}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o scales(%sa, %sb : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x60xf8E4M3FN>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E4M3FN>, %b: !sched.buffer<48x64xf8E4M3FN>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf32>, %sa: !sched.buffer<2x96xf32>, %sb: !sched.buffer<4x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op scale of lhs must be f32 [4, 96] (a scale per tile of an expert's rows and column), not '!sched.buffer<2x96xf32>'}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o scales(%sa, %sb : !sched.buffer<2x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E4M3FN>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%a: !sched.buffer<96x64xf8E4M3FN>, %b: !sched.buffer<48x64xf8E4M3FN>, %s: !sched.buffer<4xi32>, %o: !sched.buffer<2x96x48xf16>, %sa: !sched.buffer<4x96xf32>, %sb: !sched.buffer<4x48xf32>):
  // expected-error @+1 {{'sched.grouped_matmul_wgrad' op FP8 operands write f32 or bf16, not 'f16'}}
  sched.grouped_matmul_wgrad %a, %b, %s, %o scales(%sa, %sb : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E4M3FN>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf16>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<4x8xf32>, %a: !sched.buffer<1xf32>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_scale_inv' op codes must hold f8E4M3FN or f8E5M2, not 'f32'}}
  sched.fp8_scale_inv %q, %a, %s : !sched.buffer<4x8xf32>, !sched.buffer<1xf32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<4x8xf8E4M3FN>, %a: !sched.buffer<4x1xf32>, %s: !sched.buffer<1xf32>):
  // expected-error @+1 {{'sched.fp8_scale_inv' op amax must be one f32 (a per-tensor scale), not '!sched.buffer<4x1xf32>'}}
  sched.fp8_scale_inv %q, %a, %s : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<4x1xf32>, !sched.buffer<1xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<16x256xf8E4M3FN>, %a: !sched.buffer<16x2xf32>, %s: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.fp8_scale_inv' op blocks 1 x 128 of 16 x 256 are not scale mode 'rows''s}}
  sched.fp8_scale_inv %q, %a, %s {scale_mode = "rows"} : !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<16x2xf32>, !sched.buffer<16xf32>
  sched.return []
}

// -----

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<16x256xf8E4M3FN>, %a: !sched.buffer<16x2xf32>, %s: !sched.buffer<16xf32>):
  // expected-error @+1 {{'sched.fp8_scale_inv' op scale_inv must hold 32 f32 (vec128 of 16 x 256), not '!sched.buffer<16xf32>'}}
  sched.fp8_scale_inv %q, %a, %s {scale_mode = "vec128"} : !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<16x2xf32>, !sched.buffer<16xf32>
  sched.return []
}

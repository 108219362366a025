//===----------------------------------------------------------------------===//
// Library kernels' GPU scratch (dialects/sched/IR/ScratchLayout.h)
//===----------------------------------------------------------------------===//

// A reduction of 4 x 8 over dimension 0: f64 partials of 8 outputs in one
// chunk, 64 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<8xf32>, %s: !sched.buffer<8xf32>):
  sched.reduce sum %x -> %y scratch(%s : !sched.buffer<8xf32>) dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<8xf32>
  sched.return []
}

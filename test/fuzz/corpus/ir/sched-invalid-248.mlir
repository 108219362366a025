//===----------------------------------------------------------------------===//
// Unplanned programs, input_split and by_rank copies
//===----------------------------------------------------------------------===//

sched.program @p align(1) events(0) streams ["compute"] attributes {input_split = [[[]]]} {
^bb0(%x: !sched.buffer<4xf32>, %y: !sched.buffer<4xf32>):
  sched.return []
}

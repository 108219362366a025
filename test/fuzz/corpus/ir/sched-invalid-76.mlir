//===----------------------------------------------------------------------===//
// sched.program: streams and events
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4xf32>):
  sched.fill %x value 0.0 on "comm" : !sched.buffer<4xf32>
  sched.return []
}

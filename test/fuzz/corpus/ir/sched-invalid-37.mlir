//===----------------------------------------------------------------------===//
// sched.get, sched.view, sched.assign, sched.return
//===----------------------------------------------------------------------===//

sched.kernel @k inputs [] outputs [] scalars []
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %w = sched.get @k : !sched.buffer<4xf32>
  sched.return []
}

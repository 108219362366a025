//===----------------------------------------------------------------------===//
// sched.program: attributes, inputs and contents
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(48) events(0) streams ["compute"] {
  sched.return []
}

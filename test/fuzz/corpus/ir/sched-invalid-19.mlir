//===----------------------------------------------------------------------===//
// sched.schedule, sched.sequence, sched.run
//===----------------------------------------------------------------------===//

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(0) {
  sched.sequence {
    sched.run @p microbatch(0)
  }
}

sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence {
    builtin.module {}
    sched.run @p microbatch(0)
  }
}

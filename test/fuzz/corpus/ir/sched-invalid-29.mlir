sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 1 {
    sched.run @p microbatch(0)
  }
  sched.sequence where "pp" = 1 {
    sched.run @p microbatch(0)
  }
}

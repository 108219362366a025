// No mesh at all: the axis cannot be one of it.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence where "pp" = 0 {
    sched.run @p microbatch(0)
  }
}

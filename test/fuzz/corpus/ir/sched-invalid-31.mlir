// A coordinate without an axis. (An axis without a coordinate is not
// reported: the coordinate loop reads the absent coordinate first.)
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  sched.sequence attributes {coordinate = 0 : i64} {
    sched.run @p microbatch(0)
  }
}

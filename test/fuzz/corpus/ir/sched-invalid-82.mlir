sched.program @p arena(0) align(1) events(1) streams ["compute", "comm"] {
  sched.wait 0 on "comm"
  sched.record 0
  sched.return []
}

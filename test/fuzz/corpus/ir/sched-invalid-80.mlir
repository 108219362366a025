sched.program @p arena(0) align(1) events(2) streams ["compute", "comm"] {
  sched.record 0
  sched.wait 2 on "comm"
  sched.return []
}

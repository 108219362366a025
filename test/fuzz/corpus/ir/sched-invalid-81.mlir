sched.program @p arena(0) align(1) events(0) streams ["compute", "comm"] {
  sched.wait 0 on "comm"
  sched.return []
}

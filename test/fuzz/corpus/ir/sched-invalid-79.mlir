sched.program @p arena(0) align(1) events(1) streams ["compute"] {
  sched.record -1
  sched.return []
}

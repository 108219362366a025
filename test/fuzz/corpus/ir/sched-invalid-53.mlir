sched.program @p arena(-1) align(1) events(0) streams ["compute"] {
  sched.return []
}

sched.program @p arena(0) align(0) events(0) streams ["compute"] {
  sched.return []
}

sched.program @p arena(0) align(1) events(0) streams [] {
  sched.return []
}

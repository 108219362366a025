sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %c = builtin.unrealized_conversion_cast to i32
  sched.return []
}

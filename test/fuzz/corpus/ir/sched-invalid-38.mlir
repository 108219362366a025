sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %w = sched.get @missing : !sched.buffer<4xf32>
  sched.return []
}

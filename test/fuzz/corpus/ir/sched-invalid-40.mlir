sched.constant @c dense<1.0> : tensor<4xf32>
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  %c = sched.get @c : !sched.buffer<4xbf16>
  sched.return []
}

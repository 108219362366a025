// Only part of a plan: an offset without a live range.
sched.program @p arena(64) align(16) events(0) streams ["compute"] {
  %a = sched.alloc {offset = 0 : i64} : !sched.buffer<4xf32>
  sched.fill %a value 0.0 : !sched.buffer<4xf32>
  sched.return []
}

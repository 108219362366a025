sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %y: !sched.buffer<4x8xbf16>, %z: !sched.buffer<8x4xbf16>):
  sched.dropout %x, %z {rate = 0.1, seed = 0} : !sched.buffer<4x8xf32>, !sched.buffer<8x4xbf16>
  sched.return []
}

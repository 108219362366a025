sched.mesh @mesh axes ["pp"] sizes [4]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<8xf32>):
  sched.recv %x from @mesh "pp" offset -4 tag 0 : !sched.buffer<8xf32>
  sched.return []
}

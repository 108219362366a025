sched.mesh @mesh axes ["dp"] sizes [8]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<2305843009213693952xf8E4M3FN>, %y: !sched.buffer<0xf8E4M3FN>):
  sched.collective all_gather none %x -> %y over @mesh ["dp"] : !sched.buffer<2305843009213693952xf8E4M3FN> -> !sched.buffer<0xf8E4M3FN>
  sched.return []
}

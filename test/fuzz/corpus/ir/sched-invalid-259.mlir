// Checks added after review: each once broke or let bad input through.

sched.mesh @mesh axes ["pp"] sizes [2]
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
  sched.return []
}
sched.schedule @s microbatches(1) {
  // An axis without its coordinate is refused before the coordinate is read.
  sched.sequence attributes {axis = "pp"} {
    sched.run @p microbatch(0)
  }
}

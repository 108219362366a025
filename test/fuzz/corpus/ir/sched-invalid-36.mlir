sched.param @w init(zeros) : !sched.buffer<4xf32>
sched.schedule @s microbatches(1) {
  sched.sequence {
    sched.run @w microbatch(0)
  }
}

sched.param @w init(zeros) : !sched.buffer<4xi32>

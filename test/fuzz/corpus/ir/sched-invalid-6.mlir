sched.param @w init(zeros, 1.0) : !sched.buffer<4xf32>

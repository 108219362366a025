sched.param @w init(zeros) : !sched.buffer<4611686018427387904xf32>

sched.mesh @mesh axes ["tp"] sizes [2]
sched.param @w init(zeros) {split = [[1]]} : !sched.buffer<4xf32>

sched.mesh @mesh axes ["dp"] sizes [2]
sched.param @w init(zeros) {split = [["tp"]]} : !sched.buffer<4xf32>

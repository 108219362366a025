sched.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
sched.param @w init(zeros) {split = [["tp", "tp"]]} : !sched.buffer<4xf32>

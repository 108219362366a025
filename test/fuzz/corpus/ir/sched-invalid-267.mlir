sched.mesh @mesh axes ["tp"] sizes [2]
sched.param @w init(zeros) {split = [["tp"], ["tp"]]} : !sched.buffer<4x4xf32>

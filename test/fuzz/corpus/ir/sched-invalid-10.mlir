sched.param @w init(zeros) {split = [["tp"]]} : !sched.buffer<4xf32>

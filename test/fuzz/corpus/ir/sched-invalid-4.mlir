sched.mesh @mesh axes ["dp", "tp"] sizes [2, 0]

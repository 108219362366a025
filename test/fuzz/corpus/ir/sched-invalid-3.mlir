sched.mesh @mesh axes ["dp", "dp"] sizes [2, 2]

sched.kernel @k inputs [] outputs [i32] scalars []

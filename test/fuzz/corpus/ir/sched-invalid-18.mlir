sched.kernel @k inputs [] outputs [] scalars [!sched.buffer<4xf32>]

sched.constant @c dense<1.0> : tensor<4xf64>

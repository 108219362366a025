sched.schedule @s microbatches(1) {
}

// Every verifier error of the sched dialect: the buffer type, the module
// declarations, schedules, buffers, the memory plan and stream order of
// programs, and each instruction.

//===----------------------------------------------------------------------===//
// !sched.buffer
//===----------------------------------------------------------------------===//

sched.param @w init(zeros) : !sched.buffer<4xf64>

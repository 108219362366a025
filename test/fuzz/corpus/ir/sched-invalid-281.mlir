// The expert ops keep an i32 slot per routing pair: 4 tokens x 2 = 32 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %ids: !sched.buffer<4x2xi64>, %slots: !sched.buffer<8x3x8xf32>, %s: !sched.buffer<4xf32>):
  sched.expert_dispatch %x, %ids, %slots scratch(%s : !sched.buffer<4xf32>) {num_experts = 8, capacity = 3} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xi64>, !sched.buffer<8x3x8xf32>
  sched.return []
}

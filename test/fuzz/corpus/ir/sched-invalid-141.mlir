// The backward keeps scores and probabilities (256 bytes) and the f32 row
// term delta [B, Hq, S] (32 bytes).
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>, %s: !sched.buffer<64xf32>, %dq: !sched.buffer<1x4x2x4xf32>, %dk: !sched.buffer<1x4x1x4xf32>, %dv: !sched.buffer<1x4x1x4xf32>):
  sched.attention_grad %q, %k, %k, %o, %lse, %o -> %dq, %dk, %dv scratch(%s : !sched.buffer<64xf32>) scale 0.5 algorithm gemm_softmax : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>, !sched.buffer<1x4x2x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32>
  sched.return []
}

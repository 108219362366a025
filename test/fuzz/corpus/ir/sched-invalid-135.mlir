// Scores [B, Hq, S, T] = [1, 2, 4, 4]: f32 scores and f32 probabilities,
// 256 bytes.
sched.program @p arena(0) align(1) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<1x4x2x4xf32>, %k: !sched.buffer<1x4x1x4xf32>, %o: !sched.buffer<1x4x2x4xf32>, %lse: !sched.buffer<1x2x4xf32>):
  sched.attention %q, %k, %k -> %o, %lse scale 0.5 algorithm gemm_softmax : !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x4x1x4xf32>, !sched.buffer<1x4x1x4xf32> -> !sched.buffer<1x4x2x4xf32>, !sched.buffer<1x2x4xf32>
  sched.return []
}

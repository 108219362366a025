// Fused attention for the GPU runtime, f32 or bf16 in and out with f32
// arithmetic (a `_bf16` suffix names the bf16 kernels; lse and delta are f32),
// with the semantics of weft.attention / weft.attention_grad
// (dialects/weft/IR/WeftOps.td): grouped-query heads (query head h reads
// kv head h / (Hq / Hkv)), causal masking with the queries as the last S of
// T positions or, given positions (qpos [S], kpos [T]; context
// parallelism's reordered sequence and ring blocks), key t visible to query
// s iff kpos[t] <= qpos[s]; head dims up to 128. A query that sees no key
// gets zeros and lse -inf; the backward subtracts an lse gradient (or null)
// from delta.
//
// Forward, FlashAttention-style: a block of WEFT_ATTN_TILE threads owns that
// many query rows of one (batch, head); the block loads key and value tiles
// into shared memory and each thread folds them into its row with an online
// softmax (running max, running sum, rescaled accumulator), so scores never
// reach global memory; it writes the row's output and log-sum-exp.
// Backward recomputes probabilities from the log-sum-exp: one kernel per
// query row gives dq and delta = <dO, O>; one per key row gives dk and dv,
// summing over the query heads of its group.
//
// Layouts: q [B, S, Hq, D], k [B, T, Hkv, D], v [B, T, Hkv, Dv],
// o [B, S, Hq, Dv], lse and delta [B, Hq, S].
// Launch: forward and backward_dq with grid (ceil(S / 64), Hq, B), 64
// threads; backward_dkv with grid (ceil(T / 32), Hkv, B), 32 threads.
#ifdef __CUDACC_RTC__
typedef long int64_t;
#else
#include <cstdint>
#endif

#ifndef WEFT_RUNTIME_GPU_KERNELS_BF16_CUH // NVRTC gets it ahead of this file.
#include "Bf16.cuh"
#endif
#ifndef WEFT_RUNTIME_SUPPORT_COUNTERRNG_H // Likewise.
#include "../../support/CounterRng.h"
#endif

// Every kernel's last arguments (spelled out in the kernels, whose
// arity tests count): dropout of the probabilities (rate 0: none), as
// CounterRng.h's weft_attn_dropout_at takes them. The running
// sums and lse are the undropped ones; the values, and the gradients
// through them, weigh the dropped probabilities.
#define WEFT_ATTN_DROP_PARAMS                                                  \
  double drop_rate, long drop_seed, const float *drop_step,                    \
      const float *drop_microbatch, long drop_microbatches, long drop_mb_step, \
      long drop_b0, long drop_h0, long drop_heads, long drop_seq
#define WEFT_ATTN_DROP_ARGS                                                    \
  drop_rate, drop_seed, drop_step, drop_microbatch, drop_microbatches,         \
      drop_mb_step, drop_b0, drop_h0, drop_heads, drop_seq
#define WEFT_ATTN_DROP                                                         \
  weft_attn_dropout_at(drop_rate, drop_seed, drop_step, drop_microbatch,       \
                       drop_microbatches, drop_mb_step, drop_b0, drop_h0,      \
                       drop_heads, drop_seq)

#define WEFT_ATTN_TILE 64     // Query rows per forward / dq block.
#define WEFT_ATTN_ROW_TILE 32 // Rows per shared-memory tile (keys; queries for dk/dv).
#define WEFT_ATTN_MAX_D 128

static __device__ inline float weft_neg_inf() { return -__int_as_float(0x7f800000); }

static __device__ inline int64_t weft_row(int b, int pos, int positions,
                                          int h, int heads, int dim) {
  return (((int64_t)b * positions + pos) * heads + h) * dim;
}

// Rows [first, first + WEFT_ATTN_ROW_TILE) of head h of `src` (zeros past
// `positions`) into a shared tile, by the whole block.
template <typename E>
static __device__ inline void
weft_load_tile(float (*tile)[WEFT_ATTN_MAX_D], const E *__restrict src,
               int b, int first, int positions, int h, int heads, int dim) {
  for (int i = threadIdx.x; i < WEFT_ATTN_ROW_TILE * dim; i += blockDim.x) {
    int r = i / dim, c = i % dim, pos = first + r;
    tile[r][c] =
        pos < positions
            ? weft_load(src[weft_row(b, pos, positions, h, heads, dim) + c])
            : 0.0f;
  }
}

// Whether key t is hidden from query s.
static __device__ inline bool weft_hidden(const int *qpos, const int *kpos,
                                          int s, int t, int limit) {
  return qpos ? kpos[t] > qpos[s] : t > limit;
}

template <typename E>
static __device__ void
attention_forward(const E *__restrict q, const E *__restrict k,
                  const E *__restrict v, E *__restrict o,
                  float *__restrict lse, float *__restrict entropy, int B,
                  int S, int T, int Hq,
                  int Hkv, int D, int Dv, float scale, int causal,
                  const int *__restrict qpos, const int *__restrict kpos,
                  WEFT_ATTN_DROP_PARAMS) {
  __shared__ float ks[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  __shared__ float vs[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  int b = blockIdx.z, h = blockIdx.y, hk = h / (Hq / Hkv);
  int s = blockIdx.x * WEFT_ATTN_TILE + threadIdx.x;
  bool active = s < S;
  weft_attn_dropout drop = WEFT_ATTN_DROP;
  float qr[WEFT_ATTN_MAX_D], acc[WEFT_ATTN_MAX_D];
  for (int d = 0; d < D; ++d)
    qr[d] = active ? weft_load(q[weft_row(b, s, S, h, Hq, D) + d]) : 0.0f;
  for (int d = 0; d < Dv; ++d)
    acc[d] = 0.0f;
  // e: the running sum of p (x - m) beside l's of p, for the entropy
  // log l - e / l, when it is asked for.
  float m = weft_neg_inf(), l = 0.0f, e = 0.0f;
  // Keys past the block's last visible one are never loaded.
  int lastRow = min(S - 1, (int)(blockIdx.x * WEFT_ATTN_TILE) + WEFT_ATTN_TILE - 1);
  int end = causal && !qpos ? min(T, lastRow + (T - S) + 1) : T;
  int limit = causal ? s + (T - S) : T - 1;
  if (!causal)
    qpos = kpos = nullptr;
  for (int t0 = 0; t0 < end; t0 += WEFT_ATTN_ROW_TILE) {
    weft_load_tile(ks, k, b, t0, T, hk, Hkv, D);
    weft_load_tile(vs, v, b, t0, T, hk, Hkv, Dv);
    __syncthreads();
    if (active)
      for (int r = 0; r < WEFT_ATTN_ROW_TILE && t0 + r < end; ++r) {
        if (weft_hidden(qpos, kpos, s, t0 + r, limit))
          continue;
        float dot = 0.0f;
        for (int d = 0; d < D; ++d)
          dot += qr[d] * ks[r][d];
        float x = dot * scale, mNew = fmaxf(m, x);
        float keep = expf(m - mNew), p = expf(x - mNew);
        float pd =
            p * weft_attn_dropout_factor(&drop, b, h, s, S, t0 + r, T, qpos, kpos);
        if (entropy) // The terms so far, moved from base m to mNew.
          e = (l > 0.0f ? keep * (e - (mNew - m) * l) : 0.0f) + p * (x - mNew);
        l = l * keep + p;
        for (int d = 0; d < Dv; ++d)
          acc[d] = acc[d] * keep + pd * vs[r][d];
        m = mNew;
      }
    __syncthreads();
  }
  if (!active)
    return;
  for (int d = 0; d < Dv; ++d)
    weft_store(o[weft_row(b, s, S, h, Hq, Dv) + d], l > 0.0f ? acc[d] / l : 0.0f);
  lse[((int64_t)b * Hq + h) * S + s] = l > 0.0f ? m + logf(l) : weft_neg_inf();
  if (entropy)
    entropy[((int64_t)b * Hq + h) * S + s] =
        l > 0.0f ? logf(l) - e / l : weft_neg_inf();
}

template <typename E>
static __device__ void attention_backward_dq(
    const E *__restrict q, const E *__restrict k, const E *__restrict v,
    const E *__restrict o, const float *__restrict lse,
    const E *__restrict dout, E *__restrict dq, float *__restrict delta, int B,
    int S, int T, int Hq, int Hkv, int D, int Dv, float scale, int causal,
    const int *__restrict qpos, const int *__restrict kpos,
    const float *__restrict lseGrad, WEFT_ATTN_DROP_PARAMS) {
  __shared__ float ks[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  __shared__ float vs[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  int b = blockIdx.z, h = blockIdx.y, hk = h / (Hq / Hkv);
  int s = blockIdx.x * WEFT_ATTN_TILE + threadIdx.x;
  bool active = s < S;
  weft_attn_dropout drop = WEFT_ATTN_DROP;
  float qr[WEFT_ATTN_MAX_D], dor[WEFT_ATTN_MAX_D], acc[WEFT_ATTN_MAX_D];
  float ds = 0.0f, rowLse = 0.0f;
  if (active) {
    for (int d = 0; d < D; ++d)
      qr[d] = weft_load(q[weft_row(b, s, S, h, Hq, D) + d]);
    for (int d = 0; d < Dv; ++d) {
      dor[d] = weft_load(dout[weft_row(b, s, S, h, Hq, Dv) + d]);
      ds += dor[d] * weft_load(o[weft_row(b, s, S, h, Hq, Dv) + d]);
    }
    rowLse = lse[((int64_t)b * Hq + h) * S + s];
    // The lse's own gradient: dscore = p (dp - delta + lse_grad).
    if (lseGrad)
      ds -= lseGrad[((int64_t)b * Hq + h) * S + s];
    delta[((int64_t)b * Hq + h) * S + s] = ds;
  }
  for (int d = 0; d < D; ++d)
    acc[d] = 0.0f;
  int limit = causal ? s + (T - S) : T - 1;
  if (!causal)
    qpos = kpos = nullptr;
  for (int t0 = 0; t0 < T; t0 += WEFT_ATTN_ROW_TILE) {
    weft_load_tile(ks, k, b, t0, T, hk, Hkv, D);
    weft_load_tile(vs, v, b, t0, T, hk, Hkv, Dv);
    __syncthreads();
    if (active)
      for (int r = 0; r < WEFT_ATTN_ROW_TILE && t0 + r < T; ++r) {
        if (weft_hidden(qpos, kpos, s, t0 + r, limit))
          continue;
        float dot = 0.0f, dp = 0.0f;
        for (int d = 0; d < D; ++d)
          dot += qr[d] * ks[r][d];
        for (int d = 0; d < Dv; ++d)
          dp += dor[d] * vs[r][d];
        float m =
            weft_attn_dropout_factor(&drop, b, h, s, S, t0 + r, T, qpos, kpos);
        float p = expf(dot * scale - rowLse), dscore = p * (dp * m - ds);
        for (int d = 0; d < D; ++d)
          acc[d] += dscore * ks[r][d];
      }
    __syncthreads();
  }
  if (active)
    for (int d = 0; d < D; ++d)
      weft_store(dq[weft_row(b, s, S, h, Hq, D) + d], scale * acc[d]);
}

template <typename E>
static __device__ void attention_backward_dkv(
    const E *__restrict q, const E *__restrict k, const E *__restrict v,
    const float *__restrict lse, const float *__restrict delta,
    const E *__restrict dout, E *__restrict dk, E *__restrict dv, int B, int S,
    int T, int Hq, int Hkv, int D, int Dv, float scale, int causal,
    const int *__restrict qpos, const int *__restrict kpos,
    WEFT_ATTN_DROP_PARAMS) {
  __shared__ float qs[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  __shared__ float dos[WEFT_ATTN_ROW_TILE][WEFT_ATTN_MAX_D];
  int b = blockIdx.z, hk = blockIdx.y, group = Hq / Hkv;
  int t = blockIdx.x * WEFT_ATTN_ROW_TILE + threadIdx.x;
  bool active = t < T;
  weft_attn_dropout drop = WEFT_ATTN_DROP;
  float kr[WEFT_ATTN_MAX_D], vr[WEFT_ATTN_MAX_D];
  float dkAcc[WEFT_ATTN_MAX_D], dvAcc[WEFT_ATTN_MAX_D];
  for (int d = 0; d < D; ++d) {
    kr[d] = active ? weft_load(k[weft_row(b, t, T, hk, Hkv, D) + d]) : 0.0f;
    dkAcc[d] = 0.0f;
  }
  for (int d = 0; d < Dv; ++d) {
    vr[d] = active ? weft_load(v[weft_row(b, t, T, hk, Hkv, Dv) + d]) : 0.0f;
    dvAcc[d] = 0.0f;
  }
  // Query s sees key t when t <= s + (T - S), or by positions.
  if (!causal)
    qpos = kpos = nullptr;
  int first = causal && !qpos ? max(0, t - (T - S)) : 0;
  int blockFirst =
      causal && !qpos
          ? max(0, (int)(blockIdx.x * WEFT_ATTN_ROW_TILE) - (T - S))
          : 0;
  for (int h = hk * group; h < (hk + 1) * group; ++h)
    for (int s0 = blockFirst - blockFirst % WEFT_ATTN_ROW_TILE; s0 < S;
         s0 += WEFT_ATTN_ROW_TILE) {
      weft_load_tile(qs, q, b, s0, S, h, Hq, D);
      weft_load_tile(dos, dout, b, s0, S, h, Hq, Dv);
      __syncthreads();
      if (active)
        for (int r = 0; r < WEFT_ATTN_ROW_TILE && s0 + r < S; ++r) {
          int s = s0 + r;
          if (s < first || (qpos && kpos[t] > qpos[s]))
            continue;
          float dot = 0.0f, dp = 0.0f;
          for (int d = 0; d < D; ++d)
            dot += qs[r][d] * kr[d];
          for (int d = 0; d < Dv; ++d)
            dp += dos[r][d] * vr[d];
          int64_t row = ((int64_t)b * Hq + h) * S + s;
          float p = expf(dot * scale - lse[row]);
          float m =
              weft_attn_dropout_factor(&drop, b, h, s, S, t, T, qpos, kpos);
          float dscore = p * (dp * m - delta[row]);
          for (int d = 0; d < Dv; ++d)
            dvAcc[d] += p * m * dos[r][d];
          for (int d = 0; d < D; ++d)
            dkAcc[d] += dscore * qs[r][d];
        }
      __syncthreads();
    }
  if (!active)
    return;
  for (int d = 0; d < D; ++d)
    weft_store(dk[weft_row(b, t, T, hk, Hkv, D) + d], scale * dkAcc[d]);
  for (int d = 0; d < Dv; ++d)
    weft_store(dv[weft_row(b, t, T, hk, Hkv, Dv) + d], dvAcc[d]);
}

// The kernels, for f32 and bf16 tensors.
#define WEFT_ATTENTION_KERNELS(T, SUFFIX)                                      \
  extern "C" __global__ void weft_attention_forward##SUFFIX(                  \
      const T *q, const T *k, const T *v, T *o, float *lse, float *entropy,   \
      int B, int S, int Tk, int Hq, int Hkv, int D, int Dv, float scale,       \
      int causal, const int *qpos, const int *kpos, double drop_rate,          \
      long drop_seed, const float *drop_step, const float *drop_microbatch,    \
      long drop_microbatches, long drop_mb_step, long drop_b0, long drop_h0,   \
      long drop_heads, long drop_seq) {                                        \
    attention_forward(q, k, v, o, lse, entropy, B, S, Tk, Hq, Hkv, D, Dv,     \
                      scale, causal, qpos, kpos, WEFT_ATTN_DROP_ARGS);         \
  }                                                                            \
  extern "C" __global__ void weft_attention_backward_dq##SUFFIX(              \
      const T *q, const T *k, const T *v, const T *o, const float *lse,        \
      const T *dout, T *dq, float *delta, int B, int S, int Tk, int Hq,        \
      int Hkv, int D, int Dv, float scale, int causal, const int *qpos,        \
      const int *kpos, const float *lseGrad, double drop_rate, long drop_seed, \
      const float *drop_step, const float *drop_microbatch,                    \
      long drop_microbatches, long drop_mb_step, long drop_b0, long drop_h0,   \
      long drop_heads, long drop_seq) {                                        \
    attention_backward_dq(q, k, v, o, lse, dout, dq, delta, B, S, Tk, Hq, Hkv, \
                          D, Dv, scale, causal, qpos, kpos, lseGrad,           \
                          WEFT_ATTN_DROP_ARGS);                                \
  }                                                                            \
  extern "C" __global__ void weft_attention_backward_dkv##SUFFIX(             \
      const T *q, const T *k, const T *v, const float *lse,                    \
      const float *delta, const T *dout, T *dk, T *dv, int B, int S, int Tk,   \
      int Hq, int Hkv, int D, int Dv, float scale, int causal,                 \
      const int *qpos, const int *kpos, double drop_rate, long drop_seed,      \
      const float *drop_step, const float *drop_microbatch,                    \
      long drop_microbatches, long drop_mb_step, long drop_b0, long drop_h0,   \
      long drop_heads, long drop_seq) {                                        \
    attention_backward_dkv(q, k, v, lse, delta, dout, dk, dv, B, S, Tk, Hq,    \
                           Hkv, D, Dv, scale, causal, qpos, kpos,              \
                           WEFT_ATTN_DROP_ARGS);                               \
  }
WEFT_ATTENTION_KERNELS(float, )
WEFT_ATTENTION_KERNELS(weft_bf16, _bf16)

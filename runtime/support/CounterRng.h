//===- CounterRng.h - the counter-based uniform, C++ and CUDA -*- C++ -*-===//
//
// splitmix64 and the 24-bit uniform that weft.dropout and weft.param's
// initializers are defined by (Random.h wraps them for the host). Plain C
// so the same text compiles on the host, under nvcc and NVRTC (the GPU
// runtime's ops.cu and attention.cu carry it, runtime/CMakeLists.txt) and in
// the test emulator: one definition, so every backend draws the same numbers.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_COUNTERRNG_H
#define WEFT_RUNTIME_SUPPORT_COUNTERRNG_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_RNG_FN static __host__ __device__ inline
#else
#define WEFT_RNG_FN static inline
#endif

/// splitmix64's finaliser: a bijective 64-bit mix.
WEFT_RNG_FN unsigned long long weft_splitmix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A uniform draw in [0, 1) with 24 random bits (exact in fp32) for element
/// `index` of stream `seed`.
WEFT_RNG_FN double weft_uniform24(unsigned long long seed,
                                  unsigned long long index) {
  unsigned long long z =
      weft_splitmix64(seed + (index + 1) * 0x9E3779B97F4A7C15ull);
  return (double)(z >> 40) * 0x1p-24;
}

/// The stream of a dropout with seed `seed` at training step `step` (a
/// whole number held as f32; anything not in [0, 2^63) counts as 0): each
/// step draws a fresh mask (a large odd multiplier spreads the steps).
WEFT_RNG_FN unsigned long long weft_dropout_stream(unsigned long long seed,
                                                   double step) {
  unsigned long long n =
      step >= 0 && step < 9.2233720368547758e18 ? (unsigned long long)step : 0;
  return seed + n * 0xD1B54A32D192ED03ull;
}

/// Micro-batch `k` (a whole number held as f32) of `m`: anything not in
/// [0, m) counts as 0, so a damaged counter moves no index out of range.
WEFT_RNG_FN long long weft_microbatch(double k, long long m) {
  return k >= 0 && k < (double)m ? (long long)k : 0;
}

/// Attention dropout as one run of a kernel draws it: the rate (0: none),
/// the seed moved by the step, where this block's batch rows and heads
/// start in the global [batch, heads, S, T] probabilities, the global head
/// count and, for a block held by positions (context parallelism's ring),
/// the global sequence length (S = T = seq).
typedef struct {
  double rate;
  unsigned long long stream;
  long long b0, h0, heads, seq;
} weft_attn_dropout;

/// The run's dropout from a kernel's arguments: `step` and `microbatch`
/// (null: none) are the counters the run reads, micro-batch k's rows
/// starting k * `mb_step` after `b0`.
WEFT_RNG_FN weft_attn_dropout weft_attn_dropout_at(
    double rate, long long seed, const float *step, const float *microbatch,
    long long microbatches, long long mb_step, long long b0, long long h0,
    long long heads, long long seq) {
  weft_attn_dropout d;
  d.rate = rate;
  d.stream = step ? weft_dropout_stream((unsigned long long)seed, *step)
                  : (unsigned long long)seed;
  d.b0 = b0 + (microbatch ? weft_microbatch(*microbatch, microbatches) * mb_step
                          : 0);
  d.h0 = h0;
  d.heads = heads;
  d.seq = seq;
  return d;
}

/// The factor of probability (b, h, s, t) of the block (S queries, T
/// keys): 1 without dropout, else 0 where dropped and 1 / (1 - rate) (as
/// f32) where kept. The index is row-major in the global probabilities, so
/// the mask is weft.dropout's of that tensor; with positions (`qpos`,
/// `kpos` non-null, values in [0, seq): the plan's) query s and key t are
/// the sequence's qpos[s] and kpos[t] of `seq`, so a ring's blocks draw the
/// whole sequence's mask. A position out of range only draws another
/// element's mask: the index is unsigned arithmetic, never an address.
WEFT_RNG_FN float weft_attn_dropout_factor(const weft_attn_dropout *d,
                                           long long b, long long h,
                                           long long s, long long S,
                                           long long t, long long T,
                                           const int *qpos, const int *kpos) {
  if (d->rate <= 0)
    return 1.0f;
  if (qpos) {
    s = qpos[s];
    t = kpos[t];
    S = T = d->seq;
  }
  unsigned long long row =
      (unsigned long long)(d->b0 + b) * (unsigned long long)d->heads +
      (unsigned long long)(d->h0 + h);
  unsigned long long index =
      (row * (unsigned long long)S + (unsigned long long)s) *
          (unsigned long long)T +
      (unsigned long long)t;
  return weft_uniform24(d->stream, index) < d->rate
             ? 0.0f
             : (float)(1.0 / (1.0 - d->rate));
}

/// The dropout mask's index of element `i` of a rank's block of a tensor of
/// up to 4 dimensions (leading ones added): the block's sizes `local`, where
/// it starts in the global tensor `start`, the global sizes `global`; with
/// `positions`, dimension `positions_dim`'s element c is the global
/// positions[c] instead (a sequence held in another order). The
/// mask is the global tensor's, so a tensor split across ranks (or a batch
/// cut into micro-batches) draws the mask one rank and one batch would.
WEFT_RNG_FN unsigned long long
weft_global_index(unsigned long long i, const long long *local,
                  const long long *start, const long long *global,
                  const int *positions, int positions_dim) {
  unsigned long long coord[4];
  for (int d = 3; d >= 0; --d) {
    coord[d] = i % (unsigned long long)local[d];
    i /= (unsigned long long)local[d];
  }
  unsigned long long index = 0;
  for (int d = 0; d < 4; ++d)
    index = index * (unsigned long long)global[d] +
            (positions && d == positions_dim
                 ? (unsigned long long)positions[coord[d]]
                 : (unsigned long long)start[d] + coord[d]);
  return index;
}

#endif // WEFT_RUNTIME_SUPPORT_COUNTERRNG_H

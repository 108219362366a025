// The GPU runtime's kernels for the weft ops that are neither fused
// elementwise groups (generated, codegen/CudaSource.cpp), GEMMs (cuBLASLt)
// nor attention (attention.cu): data movement, reductions, embedding,
// norm gradients, cross-entropy, softmax, RoPE and element-type casts.
//
// Each follows its CPU kernel (runtime/exec/Kernels.cpp) operation for
// operation: values are f32 in memory, and arithmetic that the CPU does in
// double is done in double here. Long sums (reductions, norm parameter
// gradients, rows) are split over threads and blocks, so they run in
// another order than the CPU's: results match the CPU's to f32 rounding. Bad data (a token id or label out of
// range) is recorded in the program's error word, which the runtime reads
// after the program and reports with the step that found it.
//
// Launch shapes (GpuBackend.cpp): "element" kernels run grid-stride with
// 256-thread blocks; "row" kernels one 256-thread block per row.
#ifdef __CUDACC_RTC__
typedef long int64_t;
#else
#include <cstdint>
#endif
#ifndef WEFT_RUNTIME_GPU_KERNELS_OPSABI_H // NVRTC gets both ahead of this file.
#include "../../support/CounterRng.h"
#include "../../support/Fp8Scaling.h"
#include "../../support/HalfFloat.h"
#include "Bf16.cuh"
#include "OpsAbi.h"
#endif

#define WEFT_OPS_THREADS 256

static __device__ inline long weft_thread() {
  return (long)blockIdx.x * blockDim.x + threadIdx.x;
}
static __device__ inline long weft_stride() {
  return (long)gridDim.x * blockDim.x;
}

static __device__ inline double weft_inf() {
  return __longlong_as_double(0x7ff0000000000000LL);
}

static __device__ void weft_fail(int *error, int code, int step, long position,
                                 long value) {
  if (atomicCAS(error, 0, code) == 0) {
    error[1] = step;
    error[2] = (int)position;
    error[3] = (int)value;
  }
}

// Element i of a buffer of f32, or of bf16 with `bf16` (read as stored,
// written rounded to nearest even, as the CPU rounds a narrow result).
static __device__ inline float weft_at(const void *p, long i, int bf16) {
  return bf16 ? weft_load(((const weft_bf16 *)p)[i]) : ((const float *)p)[i];
}
static __device__ inline void weft_put(void *p, long i, float v, int bf16) {
  if (bf16)
    weft_store(((weft_bf16 *)p)[i], v);
  else
    ((float *)p)[i] = v;
}

// The sum (or maximum) of every thread's `v` over a WEFT_OPS_THREADS block.
static __device__ double weft_block_reduce(double v, double *red, bool max) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = WEFT_OPS_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] = max ? fmax(red[threadIdx.x], red[threadIdx.x + s])
                             : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  double total = red[0];
  __syncthreads();
  return total;
}

// By the whole block: the largest of x[base, base + n) (f32, or bf16 with
// `bf16`) into *rowMax and the sum of expf(x[j] - *rowMax) (f32
// exponentials, as the CPU's std::exp(float)).
static __device__ double weft_row_exp_sum(const void *x, long base, long n,
                                          double *red, float *rowMax,
                                          int bf16) {
  double m = -weft_inf();
  for (long j = threadIdx.x; j < n; j += blockDim.x)
    m = fmax(m, (double)weft_at(x, base + j, bf16));
  *rowMax = (float)weft_block_reduce(m, red, true);
  double sum = 0;
  for (long j = threadIdx.x; j < n; j += blockDim.x)
    sum += expf(weft_at(x, base + j, bf16) - *rowMax);
  return weft_block_reduce(sum, red, false);
}

// ---- data movement --------------------------------------------------------

template <typename W>
static __device__ void strided_copy(const W *__restrict in, W *__restrict out,
                                    WeftStridedIndex ix) {
  long n = 1;
  for (long d = 0; d < ix.rank; ++d)
    n *= ix.dims[d];
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long rest = i, from = ix.inBase, to = ix.outBase;
    for (long d = ix.rank - 1; d >= 0; --d) {
      long c = rest % ix.dims[d];
      rest /= ix.dims[d];
      from += c * ix.inStrides[d];
      to += c * ix.outStrides[d];
    }
    out[to] = in[from];
  }
}
// 4-byte elements (f32, i32) and 2-byte ones (bf16), moved as bits.
extern "C" __global__ void weft_strided_copy4(const unsigned *in,
                                              unsigned *out,
                                              WeftStridedIndex ix) {
  strided_copy(in, out, ix);
}
extern "C" __global__ void weft_strided_copy2(const unsigned short *in,
                                              unsigned short *out,
                                              WeftStridedIndex ix) {
  strided_copy(in, out, ix);
}
// FP8 codes (a transposed copy of gathered ones).
extern "C" __global__ void weft_strided_copy1(const unsigned char *in,
                                              unsigned char *out,
                                              WeftStridedIndex ix) {
  strided_copy(in, out, ix);
}

// sched.fill of a value other than zero bits: `bits` is one element as the
// buffer's type stores it (4 bytes: f32, i32; 2 bytes: bf16, f16).
extern "C" __global__ void weft_fill4(unsigned *out, int bits, long n) {
  for (long i = weft_thread(); i < n; i += weft_stride())
    out[i] = (unsigned)bits;
}
extern "C" __global__ void weft_fill2(unsigned short *out, int bits, long n) {
  for (long i = weft_thread(); i < n; i += weft_stride())
    out[i] = (unsigned short)bits;
}

static __device__ inline double weft_read(const void *p, int type, long i) {
  if (type == WEFT_TYPE_F32)
    return ((const float *)p)[i];
  if (type == WEFT_TYPE_I32)
    return ((const int *)p)[i];
  if (type == WEFT_TYPE_F16)
    return weft_f16_value(((const unsigned short *)p)[i]);
  return weft_load(((const weft_bf16 *)p)[i]);
}
// weft.cast, and the widening / rounding of bf16 and f16 values around the
// steps that compute in f32 (f16 is never kept as stored by a kernel).
extern "C" __global__ void weft_convert(const void *in, int from, void *out,
                                        int to, long n) {
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    double v = weft_read(in, from, i);
    if (to == WEFT_TYPE_F32)
      ((float *)out)[i] = (float)v;
    else if (to == WEFT_TYPE_I32)
      ((int *)out)[i] = (int)trunc(v);
    else if (to == WEFT_TYPE_F16)
      ((unsigned short *)out)[i] = weft_f16_bits((float)v);
    else
      weft_store(((weft_bf16 *)out)[i], (float)v);
  }
}

// ---- reductions -----------------------------------------------------------

// kind: 0 sum, 1 mean, 2 max (NaN-propagating), in double. In two passes,
// so that a sum of a hundred million elements into one (a gradient norm)
// spreads over the whole GPU rather than one thread: weft_reduce_partial's
// block (x, c) combines chunk c of the reduced elements (`chunk` of them)
// for `width` outputs x * width.. at once, 256 / width threads on each
// (width 32 keeps neighbouring outputs' reads coalesced when the kept
// dimensions are innermost; width 1 puts the whole block on one output),
// and writes partials[c * outputs + o]; weft_reduce_finish combines each
// output's partials in chunk order. Sums therefore run in a different order
// than the CPU's, in double: they agree with it to f32 rounding.

static __device__ inline double weft_combine(double a, double b, int kind) {
  if (kind != 2)
    return a + b;
  return a != a || b != b ? __longlong_as_double(0x7ff8000000000000LL)
                          : fmax(a, b);
}

// x is f32, or bf16 with `bf16` (a bias gradient in a bf16 model, read as
// stored rather than through a widened copy twice its size).
extern "C" __global__ void weft_reduce_partial(const void *__restrict x,
                                               int bf16,
                                               double *__restrict partials,
                                               long outputs, long count,
                                               long chunk, int width,
                                               WeftReduceIndex ix, int kind) {
  __shared__ double red[WEFT_OPS_THREADS];
  const int tx = threadIdx.x % width, ty = threadIdx.x / width,
            depth = WEFT_OPS_THREADS / width;
  const long o = (long)blockIdx.x * width + tx;
  double acc = kind == 2 ? -weft_inf() : 0.0;
  if (o < outputs) {
    long rest = o, base = 0;
    for (long d = ix.keptRank - 1; d >= 0; --d) {
      base += (rest % ix.keptDims[d]) * ix.keptStrides[d];
      rest /= ix.keptDims[d];
    }
    long first = (long)blockIdx.y * chunk,
         last = first + chunk < count ? first + chunk : count;
    for (long r = first + ty; r < last; r += depth) {
      long left = r, at = base;
      for (long d = ix.reducedRank - 1; d >= 0; --d) {
        at += (left % ix.reducedDims[d]) * ix.reducedStrides[d];
        left /= ix.reducedDims[d];
      }
      acc = weft_combine(acc, weft_at(x, at, bf16), kind);
    }
  }
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = depth / 2; s > 0; s >>= 1) {
    if (ty < s)
      red[threadIdx.x] =
          weft_combine(red[threadIdx.x], red[threadIdx.x + s * width], kind);
    __syncthreads();
  }
  if (ty == 0 && o < outputs)
    partials[(long)blockIdx.y * outputs + o] = red[tx];
}

extern "C" __global__ void weft_reduce_finish(const double *__restrict partials,
                                              float *__restrict y,
                                              long outputs, long chunks,
                                              long count, int kind) {
  for (long o = weft_thread(); o < outputs; o += weft_stride()) {
    double acc = partials[o];
    for (long c = 1; c < chunks; ++c)
      acc = weft_combine(acc, partials[c * outputs + o], kind);
    y[o] = (float)(kind == 1 ? acc / count : acc);
  }
}

// ---- embedding ------------------------------------------------------------

// weft.embedding (rows[t] = table[ids[t]]) and, with `grad`,
// weft.embedding_grad (table[ids[t]] += rows[t], into a table the runtime
// zeroed first). The table holds rows [offset, offset + vocab) of `total`
// (vocabulary parallelism; else offset 0, total = vocab): ids elsewhere read
// zeros, and another rank adds their rows. Rows of repeated tokens meet in
// atomicAdd, so their order of summation (not the set of terms) varies
// from run to run: gradients agree with the CPU's to f32 rounding.
extern "C" __global__ void weft_embedding(float *__restrict table,
                                          const int *__restrict ids,
                                          float *__restrict rows, long tokens,
                                          long dim, long vocab, long offset,
                                          long total, int grad, int *error,
                                          int step) {
  for (long i = weft_thread(); i < tokens * dim; i += weft_stride()) {
    long t = i / dim, id = ids[t], row = id - offset;
    if (id < 0 || id >= total) {
      if (i % dim == 0)
        weft_fail(error, WEFT_ERROR_TOKEN_ID, step, t, id);
      if (!grad)
        rows[i] = 0.0f;
    } else if (row < 0 || row >= vocab) {
      if (!grad)
        rows[i] = 0.0f;
    } else if (grad) {
      atomicAdd(&table[row * dim + i % dim], rows[i]);
    } else {
      rows[i] = table[row * dim + i % dim];
    }
  }
}

// ---- norms (backward; the forward is a generated row group) ---------------

// One block per row: the row's mean (0 for RMSNorm) and 1/sqrt(var + eps)
// into stats[2 * row], and dx. x, w, dy and dx are f32, or with `bf16` all
// bf16, read and written as stored.
extern "C" __global__ void weft_norm_grad_rows(
    const void *__restrict x, const void *__restrict w,
    const void *__restrict dy, void *__restrict dx, double *__restrict stats,
    long dim, int rms, double eps, int bf16) {
  __shared__ double red[WEFT_OPS_THREADS];
  long r = blockIdx.x, row = r * dim;
  double part = 0;
  if (!rms)
    for (long j = threadIdx.x; j < dim; j += blockDim.x)
      part += weft_at(x, row + j, bf16);
  double mean = rms ? 0.0 : weft_block_reduce(part, red, false) / dim;
  part = 0;
  for (long j = threadIdx.x; j < dim; j += blockDim.x) {
    double c = weft_at(x, row + j, bf16) - mean;
    part += c * c;
  }
  double inv = 1.0 / sqrt(weft_block_reduce(part, red, false) / dim + eps);
  double g = 0, gx = 0;
  for (long j = threadIdx.x; j < dim; j += blockDim.x) {
    double gj = (double)weft_at(dy, row + j, bf16) * weft_at(w, j, bf16);
    g += gj;
    gx += gj * ((weft_at(x, row + j, bf16) - mean) * inv);
  }
  double meanG = weft_block_reduce(g, red, false) / dim;
  double meanGX = weft_block_reduce(gx, red, false) / dim;
  for (long j = threadIdx.x; j < dim; j += blockDim.x) {
    double xhat = (weft_at(x, row + j, bf16) - mean) * inv,
           gj = (double)weft_at(dy, row + j, bf16) * weft_at(w, j, bf16);
    weft_put(dx, row + j,
             (float)((gj - (rms ? 0.0 : meanG) - xhat * meanGX) * inv), bf16);
  }
  if (threadIdx.x == 0) {
    stats[2 * r] = mean;
    stats[2 * r + 1] = inv;
  }
}

// dw = sum over rows of dy * xhat, db = sum of dy, per column, in two
// passes as weft_reduce's: block (x, c) takes columns 32 x.. (coalesced)
// and the rows of chunk c, eight rows at a time, into partials[c, column];
// weft_norm_grad_finish adds each column's chunks in order.
extern "C" __global__ void weft_norm_grad_params(
    const void *__restrict x, const void *__restrict dy,
    const double *__restrict stats, double *__restrict partials, long rows,
    long dim, long chunk, int bf16) {
  __shared__ double red[2 * WEFT_OPS_THREADS];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const long j = (long)blockIdx.x * 32 + tx;
  double gw = 0, gb = 0;
  if (j < dim) {
    long first = (long)blockIdx.y * chunk,
         last = first + chunk < rows ? first + chunk : rows;
    for (long r = first + ty; r < last; r += WEFT_OPS_THREADS / 32) {
      double xhat =
          (weft_at(x, r * dim + j, bf16) - stats[2 * r]) * stats[2 * r + 1];
      double d = weft_at(dy, r * dim + j, bf16);
      gw += d * xhat;
      gb += d;
    }
  }
  red[threadIdx.x] = gw;
  red[WEFT_OPS_THREADS + threadIdx.x] = gb;
  __syncthreads();
  for (int s = WEFT_OPS_THREADS / 64; s > 0; s >>= 1) {
    if (ty < s) {
      red[threadIdx.x] += red[threadIdx.x + 32 * s];
      red[WEFT_OPS_THREADS + threadIdx.x] +=
          red[WEFT_OPS_THREADS + threadIdx.x + 32 * s];
    }
    __syncthreads();
  }
  if (ty == 0 && j < dim) {
    partials[2 * (blockIdx.y * dim + j)] = red[tx];
    partials[2 * (blockIdx.y * dim + j) + 1] = red[WEFT_OPS_THREADS + tx];
  }
}

extern "C" __global__ void weft_norm_grad_finish(
    const double *__restrict partials, void *__restrict dw,
    void *__restrict db, long dim, long chunks, int bf16) {
  for (long j = weft_thread(); j < dim; j += weft_stride()) {
    double gw = 0, gb = 0;
    for (long c = 0; c < chunks; ++c) {
      gw += partials[2 * (c * dim + j)];
      gb += partials[2 * (c * dim + j) + 1];
    }
    weft_put(dw, j, (float)gw, bf16);
    if (db)
      weft_put(db, j, (float)gb, bf16);
  }
}

// ---- cross-entropy ----------------------------------------------------------
// Per row r of logits (this rank's columns [offset, offset + vocab) of
// `total`): m = the row's maximum, s = sum of exp(x - m) (rounded to f32, as
// the CPU keeps it) and t = the target logit (0 where the label is another
// rank's), laid out as stats = [m; s; t], each `rows` long. With the whole
// vocabulary one launch (mode 2) makes all three. Split over ranks (Megatron's
// vocabulary-parallel cross-entropy), mode 0 makes m, the runtime takes its
// maximum over the group, mode 1 makes s and t from it, and the runtime sums
// those over the group.
extern "C" __global__ void weft_cross_entropy_rows(
    const void *__restrict logits, int bf16, const int *__restrict labels,
    float *__restrict stats, long rows, long vocab, long offset, long total,
    long ignore, int mode, int *error, int step) {
  __shared__ double red[WEFT_OPS_THREADS];
  long r = blockIdx.x, row = r * vocab;
  float rowMax;
  double sum = 0;
  if (mode == 1) {
    rowMax = stats[r];
    for (long j = threadIdx.x; j < vocab; j += blockDim.x)
      sum += expf(weft_at(logits, row + j, bf16) - rowMax);
    sum = weft_block_reduce(sum, red, false);
  } else if (mode == 2) {
    sum = weft_row_exp_sum(logits, row, vocab, red, &rowMax, bf16);
  } else {
    double m = -weft_inf();
    for (long j = threadIdx.x; j < vocab; j += blockDim.x)
      m = fmax(m, (double)weft_at(logits, row + j, bf16));
    rowMax = (float)weft_block_reduce(m, red, true);
  }
  if (threadIdx.x != 0)
    return;
  stats[r] = rowMax;
  if (mode == 0)
    return;
  long label = labels[r], local = label - offset;
  if (label != ignore && (label < 0 || label >= total))
    weft_fail(error, WEFT_ERROR_LABEL, step, r, label);
  stats[rows + r] = (float)sum;
  stats[2 * rows + r] =
      local >= 0 && local < vocab ? weft_at(logits, row + local, bf16) : 0.0f;
}

// One block: the mean loss over rows whose label is not `ignore` (into
// out[0], unless null) and how many there are (count[0]), summed in a fixed
// order.
extern "C" __global__ void weft_cross_entropy_total(
    const float *__restrict stats, const int *__restrict labels,
    float *__restrict out, double *__restrict count, long rows, long ignore) {
  __shared__ double red[WEFT_OPS_THREADS];
  double loss = 0, n = 0;
  for (long r = threadIdx.x; r < rows; r += blockDim.x)
    if (labels[r] != ignore) {
      loss += logf(stats[rows + r]) + stats[r] - stats[2 * rows + r];
      n += 1;
    }
  loss = weft_block_reduce(loss, red, false);
  n = weft_block_reduce(n, red, false);
  if (threadIdx.x == 0) {
    if (out)
      out[0] = (float)(n > 0 ? loss / n : 0.0);
    count[0] = n;
  }
}

// The gradient, one element per thread: (softmax - onehot) * seed / count.
// logits and grad are f32, or with `bf16` bf16, read and written as stored.
extern "C" __global__ void weft_cross_entropy_grad(
    const void *__restrict logits, int bf16, const int *__restrict labels,
    const float *__restrict stats, const float *__restrict seed,
    const double *__restrict count, void *__restrict grad, long rows,
    long vocab, long offset, long ignore) {
  double scale = seed[0] / fmax(count[0], 1.0);
  for (long i = weft_thread(); i < rows * vocab; i += weft_stride()) {
    long r = i / vocab, j = i % vocab, label = labels[r];
    if (label == ignore) {
      weft_put(grad, i, 0.0f, bf16);
      continue;
    }
    float p = expf(weft_at(logits, i, bf16) - stats[r]) / stats[rows + r];
    weft_put(grad, i,
             (float)((p - (j + offset == label ? 1.0f : 0.0f)) * scale), bf16);
  }
}

// ---- softmax, RoPE --------------------------------------------------------

// Softmax over the middle extent n of [outer, n, inner]: one thread per
// (outer, inner) line.
extern "C" __global__ void weft_softmax(const float *__restrict x,
                                        float *__restrict y, long outer,
                                        long n, long inner) {
  for (long line = weft_thread(); line < outer * inner; line += weft_stride()) {
    long o = line / inner, in = line % inner;
    const float *a = x + o * n * inner + in;
    float *b = y + o * n * inner + in;
    double m = -weft_inf(), sum = 0;
    for (long j = 0; j < n; ++j)
      m = fmax(m, (double)a[j * inner]);
    for (long j = 0; j < n; ++j)
      sum += exp(a[j * inner] - m);
    for (long j = 0; j < n; ++j)
      b[j * inner] = (float)(exp(a[j * inner] - m) / sum);
  }
}

// Rotary embedding of [B, P, H, D], one thread per rotated pair (i, i + D/2).
// `at` (null: each row's index) holds row p's position, as context
// parallelism's reordered sequence needs.
extern "C" __global__ void weft_rope(const float *__restrict x,
                                     float *__restrict y, long batch,
                                     long positions, long heads, long dim,
                                     double theta, double sign, long offset,
                                     const int *__restrict at) {
  long half = dim / 2, pairs = batch * positions * heads * half;
  for (long k = weft_thread(); k < pairs; k += weft_stride()) {
    long i = k % half, row = k / half, p = (row / heads) % positions;
    long base = row * dim;
    double pos = at ? (double)at[p] : (double)p;
    double f = sign * (pos + (double)offset) * pow(theta, -2.0 * i / (double)dim);
    double x1 = x[base + i], x2 = x[base + i + half];
    y[base + i] = (float)(x1 * cos(f) - x2 * sin(f));
    y[base + i + half] = (float)(x2 * cos(f) + x1 * sin(f));
  }
}

// ---- attention through GEMMs ----------------------------------------------
// For sequences whose [B, Hq, S, T] scores fit a scratch budget the runtime
// computes attention with cuBLASLt (tensor cores) around these kernels:
// scores = scale Q K^T (GEMM, f32), probabilities (here), O = P V (GEMM);
// the backward recomputes P from the saved log-sum-exp. Query s sees key t
// when t <= s + (T - S) under `causal`.

// Attention dropout's arguments, last in weft_attention_probs and
// weft_attention_dscores: as attention.cu's kernels take them
// (CounterRng.h's weft_attn_dropout_at), rate 0 for none.
#define WEFT_ATTN_DROP                                                         \
  weft_attn_dropout_at(drop_rate, drop_seed, drop_step, drop_microbatch,       \
                       drop_microbatches, drop_mb_step, drop_b0, drop_h0,      \
                       drop_heads, drop_seq)

// One block per (b, h, s) row of scores: with lse_in null, the row's
// log-sum-exp into lse_out and P = exp(x - lse); with lse_in, P from it.
// P is written as `type` (WEFT_TYPE_F32 or WEFT_TYPE_BF16), 0 where masked;
// with dropout (`drop`, as the forward and dV need them) each scaled by its
// mask's factor. With `entropy` (not null), the row's entropy of the
// undropped P, -sum_t P_t (x_t - lse).
extern "C" __global__ void weft_attention_probs(
    const float *__restrict scores, void *__restrict probs, int type,
    const float *__restrict lse_in, float *__restrict lse_out,
    float *__restrict entropy, long S,
    long T, int causal, long heads, int drop, double drop_rate, long drop_seed,
    const float *drop_step, const float *drop_microbatch,
    long drop_microbatches, long drop_mb_step, long drop_b0, long drop_h0,
    long drop_heads, long drop_seq) {
  __shared__ double red[WEFT_OPS_THREADS];
  long row = blockIdx.x, s = row % S;
  weft_attn_dropout dropout = WEFT_ATTN_DROP;
  long h = (row / S) % heads, b = row / (S * heads);
  const float *x = scores + row * T;
  long visible = causal ? min(T, s + (T - S) + 1) : T;
  float lse;
  if (lse_in) {
    lse = lse_in[row];
  } else {
    float rowMax;
    double sum = weft_row_exp_sum(scores, row * T, visible, red, &rowMax, 0);
    lse = sum > 0 ? rowMax + logf((float)sum) : -weft_inf();
    if (threadIdx.x == 0)
      lse_out[row] = lse;
  }
  double plogp = 0.0;
  for (long t = threadIdx.x; t < T; t += blockDim.x) {
    float p = t < visible ? expf(x[t] - lse) : 0.0f;
    if (entropy && p > 0.0f)
      plogp += (double)p * (x[t] - lse);
    if (drop)
      p *= weft_attn_dropout_factor(&dropout, b, h, s, S, t, T, 0, 0);
    if (type == WEFT_TYPE_F32)
      ((float *)probs)[row * T + t] = p;
    else
      weft_store(((weft_bf16 *)probs)[row * T + t], p);
  }
  if (entropy) {
    // Every thread of the block takes part in the reduction.
    double sum = weft_block_reduce(plogp, red, false);
    if (threadIdx.x == 0)
      entropy[row] = lse == -weft_inf() ? -weft_inf() : (float)-sum;
  }
}

// delta[b, h, s] = <dO[b, s, h, :], O[b, s, h, :]>, one thread per row.
extern "C" __global__ void weft_attention_delta(
    const void *__restrict dout, const void *__restrict out, int type,
    float *__restrict delta, long batch, long S, long heads, long dv) {
  for (long row = weft_thread(); row < batch * heads * S; row += weft_stride()) {
    long s = row % S, h = (row / S) % heads, b = row / (S * heads);
    long at = ((b * S + s) * heads + h) * dv;
    float sum = 0.0f;
    for (long d = 0; d < dv; ++d)
      sum += (float)(weft_read(dout, type, at + d) * weft_read(out, type, at + d));
    delta[row] = sum;
  }
}

// dS = scale P (dP M - delta), in place of P (stored as `type`, undropped);
// dP is f32, M dropout's factors (1 without).
extern "C" __global__ void weft_attention_dscores(
    void *__restrict probs, int type, const float *__restrict dprobs,
    const float *__restrict delta, float scale, long n, long S, long T,
    long heads, double drop_rate, long drop_seed, const float *drop_step,
    const float *drop_microbatch, long drop_microbatches, long drop_mb_step,
    long drop_b0, long drop_h0, long drop_heads, long drop_seq) {
  weft_attn_dropout dropout = WEFT_ATTN_DROP;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long row = i / T, s = row % S, h = (row / S) % heads, b = row / (S * heads);
    float m = weft_attn_dropout_factor(&dropout, b, h, s, S, i % T, T, 0, 0);
    float p = (float)weft_read(probs, type, i);
    float ds = scale * p * (dprobs[i] * m - delta[row]);
    if (type == WEFT_TYPE_F32)
      ((float *)probs)[i] = ds;
    else
      weft_store(((weft_bf16 *)probs)[i], ds);
  }
}

// ---- collectives ------------------------------------------------------------

// to = scale * from: unpacking an all-reduced bucket (scale 1 for a sum,
// 1 / group size for a mean).
extern "C" __global__ void weft_scale_copy(const float *__restrict from,
                                           float *__restrict to, long n,
                                           float scale) {
  for (long i = weft_thread(); i < n; i += weft_stride())
    to[i] = from[i] * scale;
}

// ---- mixture of experts -------------------------------------------------------

// weft.topk (values, ids of the k largest of each row of n) and
// weft.topk_gating (the same of the row's softmax, optionally renormalized
// over the k chosen). One thread per row; the j-th choice is the largest
// value below the (j-1)-th, ties to the lower index, as the CPU's stable
// sort orders them.
static __device__ double weft_gate(const float *x, long j, int gating,
                                   double m, double sum) {
  return gating ? exp(x[j] - m) / sum : (double)x[j];
}
extern "C" __global__ void weft_topk(const float *__restrict x,
                                     float *__restrict values,
                                     int *__restrict ids, long rows, long n,
                                     long k, int gating, int normalize) {
  for (long r = weft_thread(); r < rows; r += weft_stride()) {
    const float *xr = x + r * n;
    double m = -weft_inf(), sum = 0;
    for (long j = 0; j < n; ++j)
      m = fmax(m, (double)xr[j]);
    for (long j = 0; j < n; ++j)
      sum += exp(xr[j] - m);
    double lastValue = weft_inf(), chosen = 0;
    long lastIndex = -1;
    for (long c = 0; c < k; ++c) {
      long best = -1;
      double bestValue = 0;
      for (long j = 0; j < n; ++j) {
        double v = weft_gate(xr, j, gating, m, sum);
        bool after = v < lastValue || (v == lastValue && j > lastIndex);
        if (after && (best < 0 || v > bestValue)) {
          best = j;
          bestValue = v;
        }
      }
      lastValue = bestValue;
      lastIndex = best;
      ids[r * k + c] = (int)best;
      values[r * k + c] = (float)bestValue;
      chosen += bestValue;
    }
    if (gating && normalize)
      for (long c = 0; c < k; ++c)
        values[r * k + c] =
            (float)(weft_gate(xr, ids[r * k + c], 1, m, sum) / chosen);
  }
}

// weft.expert_route, first pass, on one thread so the order is the CPU's:
// GShard's, every token's choice j before any choice j + 1. positions[p]
// gets the pair's rank among its expert's kept pairs (-1: dropped, or an
// expert id outside [0, experts)) and counts[e] the pairs e kept;
// capacity 0 keeps every pair.
//
// With `all` (a route over a group of ranks: every member's pairs per
// (choice, expert), f32 [group, k, E], gathered from weft_expert_route_count),
// GShard's order runs over the group's tokens: choice j of every member's
// tokens before choice j + 1, the members in order, so a pair is kept when
// the pairs of its expert the group visits before it are under capacity.
// `seen` (E ints) counts this rank's pairs of the current choice; `before`
// ([k, E] floats: this rank's counts, no longer needed once gathered) gets
// the group's pairs visited before this rank's choice-j pairs, once.
extern "C" __global__ void
weft_expert_route_rank(const int *__restrict ids, int *__restrict positions,
                       int *__restrict counts, long tokens, long k,
                       long experts, long capacity, int *error, int step,
                       const float *__restrict all, long group,
                       long groupRank, int *__restrict seen,
                       float *__restrict before) {
  if (weft_thread() != 0)
    return;
  for (long e = 0; e < experts; ++e)
    counts[e] = 0;
  // Every member's pairs of earlier choices, and earlier members' of this
  // one (as the CPU's expertRoute).
  if (all)
    for (long e = 0; e < experts; ++e) {
      float earlierChoices = 0.0f;
      for (long j = 0; j < k; ++j) {
        float earlierMembers = 0.0f, choice = 0.0f;
        for (long r = 0; r < group; ++r) {
          float n = all[(r * k + j) * experts + e];
          choice += n;
          if (r < groupRank)
            earlierMembers += n;
        }
        before[j * experts + e] = earlierChoices + earlierMembers;
        earlierChoices += choice;
      }
    }
  for (long j = 0; j < k; ++j) {
    if (all)
      for (long e = 0; e < experts; ++e)
        seen[e] = 0;
    for (long t = 0; t < tokens; ++t) {
      long p = t * k + j, e = ids[p];
      if (e < 0 || e >= experts) {
        weft_fail(error, WEFT_ERROR_EXPERT_ID, step, p, e);
        positions[p] = -1;
        continue;
      }
      if (!all) {
        positions[p] =
            capacity == 0 || counts[e] < capacity ? counts[e]++ : -1;
        continue;
      }
      // The group's pairs of expert e before this one.
      long visited = (long)before[j * experts + e] + seen[e]++;
      positions[p] = capacity == 0 || visited < capacity ? counts[e]++ : -1;
    }
  }
}

// A route over a group: this rank's pairs per (choice, expert) as f32
// [k, E] (exact below 2^24), which the group all-gathers for
// weft_expert_route_rank. One thread, as the ranking.
extern "C" __global__ void weft_expert_route_count(const int *__restrict ids,
                                                   float *__restrict mine,
                                                   long tokens, long k,
                                                   long experts) {
  if (weft_thread() != 0)
    return;
  for (long c = 0; c < k * experts; ++c)
    mine[c] = 0.0f;
  for (long p = 0; p < tokens * k; ++p) {
    long e = ids[p];
    if (e >= 0 && e < experts) // The ranking reports a bad id.
      mine[(p % k) * experts + e] += 1.0f;
  }
}

// sched.ragged_all_to_all as a fixed all-to-all of padded blocks. Pack:
// member m's rows of `in` [rows, dim] (its `per` segments of `sizes`,
// consecutive) into block m of `padded` [group, rows, dim], zeros after
// them. Unpack: block m of `padded` holds member m's rows; they go to `out`
// [outRows, dim] in member order, zeros after. Both read each member's
// first row from `offsets` [group + 1], made once per exchange by
// weft_ragged_offsets, which fails the step on sizes that overrun a buffer
// (their segment and size).
extern "C" __global__ void
weft_ragged_offsets(const int *__restrict sizes, long group, long per,
                    long rows, long limit, long *__restrict offsets,
                    int *error, int step) {
  if (weft_thread() != 0)
    return;
  offsets[0] = 0;
  for (long m = 0; m < group; ++m) {
    long n = 0;
    for (long i = m * per; i < (m + 1) * per; ++i) {
      if (sizes[i] < 0)
        weft_fail(error, WEFT_ERROR_GROUP, step, i, sizes[i]);
      n += sizes[i] > 0 ? sizes[i] : 0;
    }
    if (n > rows) // More than a padded block holds.
      weft_fail(error, WEFT_ERROR_GROUP, step, m * per, n);
    offsets[m + 1] = offsets[m] + n;
  }
  if (offsets[group] > limit) // More than the buffer's rows.
    weft_fail(error, WEFT_ERROR_GROUP, step, group * per - 1, offsets[group]);
}

// A group of one sends to itself: what it sends must be what it receives,
// inside its rows. One thread.
extern "C" __global__ void weft_ragged_self(const int *__restrict sent,
                                            const int *__restrict received,
                                            long nSent, long nReceived,
                                            long rows, int *error, int step) {
  if (weft_thread() != 0)
    return;
  long out = 0, in = 0;
  for (long i = 0; i < nSent; ++i)
    out += sent[i];
  for (long i = 0; i < nReceived; ++i)
    in += received[i];
  if (out != in || out > rows)
    weft_fail(error, WEFT_ERROR_GROUP, step, 0, out);
}

extern "C" __global__ void
weft_ragged_pack(const float *__restrict in, const long *__restrict offsets,
                 float *__restrict padded, long group, long rows, long dim) {
  long n = group * rows * dim;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long member = i / (rows * dim), r = i / dim % rows, c = i % dim;
    long first = offsets[member], count = offsets[member + 1] - first;
    // Past the input (the offsets kernel failed the step): zeros.
    bool inside = r < count && first + count <= rows;
    padded[i] = inside ? in[(first + r) * dim + c] : 0.0f;
  }
}

extern "C" __global__ void
weft_ragged_unpack(const float *__restrict padded,
                   const long *__restrict offsets, float *__restrict out,
                   long group, long rows, long outRows, long dim) {
  long n = outRows * dim;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long o = i / dim, c = i % dim, member = 0;
    while (member < group && o >= offsets[member + 1])
      ++member;
    long r = member < group ? o - offsets[member] : rows;
    out[i] = r < rows ? padded[(member * rows + r) * dim + c] : 0.0f;
  }
}

// Second pass: a kept pair's rank becomes its packed row, after the rows
// of the experts before its own.
extern "C" __global__ void weft_expert_route_rows(const int *__restrict ids,
                                                  int *__restrict positions,
                                                  const int *__restrict counts,
                                                  long pairs) {
  for (long p = weft_thread(); p < pairs; p += weft_stride()) {
    if (positions[p] < 0)
      continue;
    long first = 0;
    for (long e = 0; e < ids[p]; ++e)
      first += counts[e];
    positions[p] += (int)first;
  }
}

// Rows between routing pairs and packed rows [rows, dim], into a `to` the
// runtime zeroed: mode 0 dispatch (token rows [T, D] to rows), 1 scatter
// ([T, k, D] to rows), 2 gather (rows to [T, k, D]), 3 combine (rows to
// [T, D], weighted by weights [T, k] and summed over a token's k choices in
// order, one thread per output element). A position outside [-1, rows)
// fails the step.
extern "C" __global__ void weft_expert_move(
    const float *__restrict from, const int *__restrict positions,
    const float *__restrict weights, float *__restrict to, long pairs, long k,
    long rows, long dim, int mode, int *error, int step) {
  long n = (mode == 3 ? pairs / k : pairs) * dim;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long d = i % dim;
    if (mode == 3) {
      long t = i / dim;
      float sum = 0.0f;
      for (long j = 0; j < k; ++j) {
        long p = t * k + j, r = positions[p];
        if (r >= rows || r < -1) {
          weft_fail(error, WEFT_ERROR_POSITION, step, p, r);
          continue;
        }
        if (r >= 0)
          sum += weights[p] * from[r * dim + d];
      }
      to[i] = sum;
      continue;
    }
    long p = i / dim, r = positions[p];
    if (r >= rows || r < -1) {
      weft_fail(error, WEFT_ERROR_POSITION, step, p, r);
      continue;
    }
    if (r < 0)
      continue;
    if (mode == 2)
      to[p * dim + d] = from[r * dim + d];
    else
      to[r * dim + d] = from[(mode == 0 ? p / k : p) * dim + d];
  }
}

// weft.dropout: element i is kept iff u(seed, g) >= rate, g its index in
// the global tensor (CounterRng.h, the definitions every backend shares:
// the block is local[4] at start[4] of global[4], dimension mb_dim of
// micro-batch k starting k * mb_step further on; with positions, element c
// of dimension positions_dim is the sequence's positions[c]), kept ones
// scaled by 1 / (1 - rate) in double, as on the CPU.
extern "C" __global__ void
weft_dropout(const float *__restrict x, float *__restrict y, long n,
             double rate, long seed, const float *__restrict step,
             const float *__restrict microbatch, long microbatches,
             long mb_dim, long mb_step, long l0, long l1, long l2, long l3,
             long s0, long s1, long s2, long s3, long g0, long g1, long g2,
             long g3, const int *__restrict positions, long positions_dim) {
  unsigned long long stream =
      step ? weft_dropout_stream((unsigned long long)seed, (double)*step)
           : (unsigned long long)seed;
  const long long local[4] = {l0, l1, l2, l3};
  long long start[4] = {s0, s1, s2, s3};
  if (microbatch)
    start[mb_dim & 3] += weft_microbatch(*microbatch, microbatches) * mb_step;
  const long long global[4] = {g0, g1, g2, g3};
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    unsigned long long at =
        weft_global_index((unsigned long long)i, local, start, global,
                          positions, (int)positions_dim);
    y[i] = rate > 0 && weft_uniform24(stream, at) < rate
               ? 0.0f
               : (float)(x[i] / (1.0 - rate));
  }
}

// weft.fp8_amax of a tensor of up to 4 dims (d, leading ones added; f32,
// or bf16 read as stored) under a grid g of blocks: `parts` thread blocks
// per FP8 block (grid-stride over them) each take the largest magnitude of
// their share, a NaN counting as infinity (which a max all-reduce keeps,
// where it could drop a NaN). One part writes its maximum; several combine
// theirs by atomicMax on the bits into a zeroed amax (non-negative floats
// and +inf order as their unsigned bits), so a per-tensor maximum is
// spread over the whole GPU rather than one thread block.
extern "C" __global__ void
weft_fp8_amax(const void *__restrict x, int bf16, float *__restrict amax,
              long d0, long d1, long d2, long d3, long g0, long g1, long g2,
              long g3, long parts) {
  __shared__ float red[WEFT_OPS_THREADS];
  long b0 = d0 / g0, b1 = d1 / g1, b2 = d2 / g2, b3 = d3 / g3;
  long size = b0 * b1 * b2 * b3, share = (size + parts - 1) / parts;
  for (long t = blockIdx.x; t < g0 * g1 * g2 * g3 * parts; t += gridDim.x) {
    long blk = t / parts, part = t % parts;
    // The block's first element; element j of the block lies at its
    // coordinates within the block from there.
    long c3 = blk % g3 * b3, c2 = blk / g3 % g2 * b2,
         c1 = blk / (g3 * g2) % g1 * b1, c0 = blk / (g3 * g2 * g1) * b0;
    long first = ((c0 * d1 + c1) * d2 + c2) * d3 + c3;
    long end = min(size, (part + 1) * share);
    float m = 0.0f;
    for (long j = part * share + threadIdx.x; j < end; j += blockDim.x) {
      long at = first + ((j / (b3 * b2 * b1) * d1 + j / (b3 * b2) % b1) * d2 +
                         j / b3 % b2) * d3 + j % b3;
      float a = fabsf(weft_at(x, at, bf16));
      m = a != a ? __int_as_float(0x7f800000) : fmaxf(a, m);
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = WEFT_OPS_THREADS / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s)
        red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (parts == 1)
        amax[blk] = red[0];
      else
        atomicMax((unsigned *)&amax[blk], __float_as_uint(red[0]));
    }
    __syncthreads();
  }
}

// The block (of grid [g0, g1, g2, g3]) of element i of a tensor [d0, d1,
// d2, d3]: weft.fp8_quantize's, fp8_encode's and fp8_decode's.
__device__ inline long weft_fp8_block_of(long i, long d0, long d1, long d2,
                                         long d3, long g0, long g1, long g2,
                                         long g3) {
  long c3 = i % d3, c2 = i / d3 % d2, c1 = i / (d3 * d2) % d1,
       c0 = i / (d3 * d2 * d1);
  return ((c0 / (d0 / g0) * g1 + c1 / (d1 / g1)) * g2 + c2 / (d2 / g2)) * g3 +
         c3 / (d3 / g3);
}

// weft.fp8_quantize, one element per thread: its block's scale from amax
// (Fp8Scaling.h, as the CPU), then the quantize-dequantize.
extern "C" __global__ void weft_fp8_quantize(
    const float *__restrict x, const float *__restrict amax,
    float *__restrict y, long d0, long d1, long d2, long d3, long g0, long g1,
    long g2, long g3, int e4m3, int pow2) {
  long n = d0 * d1 * d2 * d3;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long blk = weft_fp8_block_of(i, d0, d1, d2, d3, g0, g1, g2, g3);
    y[i] = weft_fp8_quantize(x[i], weft_fp8_scale(amax[blk], e4m3, pow2),
                             e4m3);
  }
}

// sched.fp8_encode: fp8_quantize's blocks kept as FP8 codes, one byte an
// element, to move them; x f32, or bf16 read as stored.
extern "C" __global__ void
weft_fp8_encode(const void *__restrict x, int bf16,
                const float *__restrict amax, unsigned char *__restrict codes,
                long d0, long d1, long d2, long d3, long g0, long g1, long g2,
                long g3, int e4m3, int pow2) {
  long n = d0 * d1 * d2 * d3;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long blk = weft_fp8_block_of(i, d0, d1, d2, d3, g0, g1, g2, g3);
    codes[i] = weft_fp8_code(weft_at(x, i, bf16),
                             weft_fp8_scale(amax[blk], e4m3, pow2), e4m3);
  }
}

// sched.fp8_decode: the values fp8_quantize writes, from fp8_encode's codes;
// y f32, or bf16 rounded to nearest even as a bf16 quantization's are.
extern "C" __global__ void
weft_fp8_decode(void *__restrict y, int bf16, const float *__restrict amax,
                const unsigned char *__restrict codes, long d0, long d1,
                long d2, long d3, long g0, long g1, long g2, long g3, int e4m3,
                int pow2) {
  long n = d0 * d1 * d2 * d3;
  for (long i = weft_thread(); i < n; i += weft_stride()) {
    long blk = weft_fp8_block_of(i, d0, d1, d2, d3, g0, g1, g2, g3);
    weft_put(y, i,
             weft_fp8_decode(codes[i], weft_fp8_scale(amax[blk], e4m3, pow2),
                             e4m3),
             bf16);
  }
}

// sched.fp8_cast: the FP8 codes of x [batch, rows, cols] (f32, or bf16 read
// as stored) by its blocks' scales from amax, written as they are or,
// with `transpose`, each matrix transposed ([batch, cols, rows]: cuBLASLt's
// FP8 GEMMs read k contiguous), and each block's 1 / scale where `mode`
// keeps it (Fp8Scaling.h). The transposed writes are strided: a tiled
// cast-transpose through shared memory is the faster form, left until a
// GPU measures it.
extern "C" __global__ void
weft_fp8_cast(const void *__restrict x, int bf16, const float *__restrict amax,
              unsigned char *__restrict out, float *__restrict scaleInv,
              long batch, long rows, long cols, int transpose, int e4m3,
              int pow2, int mode, long blockRows, long blockCols) {
  long n = batch * rows * cols;
  for (long i = weft_thread(); i < n; i += weft_stride())
    weft_fp8_cast_element(weft_at(x, i, bf16), i, amax, out, scaleInv, batch,
                          rows, cols, transpose, e4m3, pow2, mode, blockRows,
                          blockCols);
}

// sched.fp8_scale_inv: each block's 1 / scale as weft_fp8_cast writes it
// (for x [batch, rows, cols], transposed or not), one thread a block, for
// codes that already are a cast's.
extern "C" __global__ void
weft_fp8_scale_inv(const float *__restrict amax, float *__restrict scaleInv,
                   long blocks, long batch, long rows, long cols,
                   int transpose, int e4m3, int pow2, int mode,
                   long blockRows, long blockCols) {
  for (long blk = weft_thread(); blk < blocks; blk += weft_stride())
    weft_fp8_block_scale_inv(blk, amax, scaleInv, batch, rows, cols, transpose,
                             e4m3, pow2, mode, blockRows, blockCols);
}

// A warp's 2 x 4 tensor-core products of FP8 codes of one 32-element
// k-block, each from zero: d[mi][ni] = A_mi B_ni^T with mma.sync.aligned.
// m16n8k32 (sm_89 and up) and the PTX ISA's fragments for it: lane 4g + t
// holds, in byte j of each word, A_mi[g + 8 (r & 1)][16 (r >> 1) + 4t + j]
// in a[mi][r] and B_ni[g][16 r + 4t + j] in b[ni][r] (B_ni is [8, 32], k
// contiguous as A's rows), and gets D[g + 8 (i >> 1)][2t + (i & 1)] in
// d[mi][ni][i]. E5M2 by E5M2 is refused before launch, as cuBLASLt
// refuses it. The test emulator runs its own model of the instruction
// instead (cuda_emulation.h), written from the ISA's element tables, all
// eight products at once (one exchange of the warp's fragments).
static __device__ inline void weft_mma_fp8_warp_tile(float d[2][4][4],
                                                     const unsigned a[2][4],
                                                     const unsigned b[4][2],
                                                     int e4m3A, int e4m3B) {
#if defined(WEFT_CUDA_EMULATION)
  weft_emulated_mma_fp8(2, 4, &d[0][0][0], &a[0][0], &b[0][0], e4m3A, e4m3B);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define WEFT_MMA_FP8(TA, TB)                                                   \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB ".f32 "      \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "                \
               "{%10, %11, %12, %13};"                                         \
               : "=f"(o[0]), "=f"(o[1]), "=f"(o[2]), "=f"(o[3])                \
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]),        \
                 "r"(y[1]), "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f))
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      float *o = d[mi][ni];
      const unsigned *x = a[mi], *y = b[ni];
      if (e4m3A && e4m3B)
        WEFT_MMA_FP8("e4m3", "e4m3");
      else if (e4m3A)
        WEFT_MMA_FP8("e4m3", "e5m2");
      else
        WEFT_MMA_FP8("e5m2", "e4m3");
    }
#undef WEFT_MMA_FP8
#else
  // No FP8 tensor cores (or nvcc's host pass): GpuBackend refuses this
  // kernel before sm_89.
  for (int i = 0; i < 2 * 4 * 4; ++i)
    (&d[0][0][0])[i] = __int_as_float(0x7fc00000);
#endif
}

// Four k-consecutive FP8 codes at p as one word, the first in the low
// byte (the fragments' order); byte by byte where p may be unaligned.
static __device__ inline unsigned weft_codes4(const unsigned char *p,
                                              int aligned) {
  if (aligned)
    return *(const unsigned *)p;
  return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
         (unsigned)p[3] << 24;
}

// The four codes at p + at, those at or past `end` read as 0 (+0 in both
// formats): the tail of an expert's rows in its last 32-row block.
static __device__ inline unsigned
weft_codes4_upto(const unsigned char *p, long at, long end, int aligned) {
  if (at + 4 <= end)
    return weft_codes4(p + at, aligned);
  unsigned w = 0;
  for (int j = 0; j < 4 && at + j < end; ++j)
    w |= (unsigned)p[at + j] << 8 * j;
  return w;
}

#define WEFT_FP8_ROW 12 // Words a row of 32 codes takes in shared.
// Each thread loads half a row of each tile and one scale.
static_assert(WEFT_FP8_GEMM_THREADS == 2 * WEFT_FP8_GEMM_TILE,
              "weft_fp8_block_gemm's loads assume two threads a tile row");

// One 32-element k-block of a 64 x 64 tile of C: each warp reads its
// fragments from the shared tiles, multiplies them from zero
// (weft_mma_fp8_warp_tile) and adds the partial sums times the rows' and
// columns' scales to acc, in f32.
static __device__ inline void
weft_fp8_block_step(float acc[2][4][4], const unsigned *tileA,
                    const unsigned *tileB, const float *rowScale,
                    const float *colScale, int e4m3A, int e4m3B) {
  int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  int g = lane / 4, t = lane % 4;
  int warpRow = warp / 2 * 32, warpCol = warp % 2 * 32;
  unsigned a[2][4], b[4][2];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int q = 0; q < 4; ++q)
      a[mi][q] = tileA[(warpRow + mi * 16 + g + 8 * (q & 1)) * WEFT_FP8_ROW +
                       4 * (q >> 1) + t];
#pragma unroll
  for (int ni = 0; ni < 4; ++ni)
#pragma unroll
    for (int q = 0; q < 2; ++q)
      b[ni][q] = tileB[(warpCol + ni * 8 + g) * WEFT_FP8_ROW + 4 * q + t];
  float d[2][4][4];
  weft_mma_fp8_warp_tile(d, a, b, e4m3A, e4m3B);
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[mi][ni][i] += d[mi][ni][i] *
                          rowScale[warpRow + mi * 16 + g + 8 * (i >> 1)] *
                          colScale[warpCol + ni * 8 + 2 * t + (i & 1)];
}

// Writes (or with `accumulate` adds) a block's acc to the rows [row0,
// rowEnd) and columns below n of its 64 x 64 tile of C (rows ldc apart).
static __device__ inline void weft_fp8_tile_store(float acc[2][4][4], void *C,
                                                  long row0, long rowEnd,
                                                  long col0, long n, long ldc,
                                                  int bf16Out, int accumulate) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int g = lane / 4, t = lane % 4;
  int warpRow = warp / 2 * 32, warpCol = warp % 2 * 32;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        long row = row0 + warpRow + mi * 16 + g + 8 * (i >> 1),
             col = col0 + warpCol + ni * 8 + 2 * t + (i & 1);
        if (row >= rowEnd || col >= n)
          continue;
        float v = acc[mi][ni][i];
        if (accumulate)
          v += weft_at(C, row * ldc + col, bf16Out);
        weft_put(C, row * ldc + col, v, bf16Out);
      }
}

// Weft's own block-scaled FP8 GEMM, for what cuBLASLt has no mode for:
// MXFP8's 1 x 32 blocks ("vec32", Blackwell's only in cuBLASLt) and grouped
// (expert) GEMMs in any mode (cuBLAS's grouped GEMM takes no FP8). C[m, n]
// (+)= the sum over k-blocks t of 32 of (A_t B_t^T)[i, j] * sA(i, t) *
// sB(j, t), with A [m, k] and B [n, k] FP8 codes (k contiguous, rows lda
// and ldb bytes apart) and sA, sB their inverse scales in modes modeA and
// modeB (Fp8Scaling.h's layouts: a row's or block's scale is the same for
// each 32-element block it spans), C f32 or bf16 (rows ldc apart). Each
// k-block is one mma per 16 x 8 of C into zeroed registers, whose f32
// partial sums are scaled and added in f32, as DeepSeek-V3 promotes its
// 128-blocks out of the tensor cores.
//
// With `sizes` (i32 [groups], on the device), A and C are the rows of
// consecutive groups: group g's rows times expert g mod `experts`'s B,
// the e-th [n, k] of B [experts * n, k] (its scales those of that matrix);
// rows after the groups are zeroed. The grid's y covers every group's
// tiles and then the rest's (ceil(m / 64) + groups of them at most); a
// block finds its group by walking the sizes, each clamped to the rows
// left, so a bad size reads and writes nothing outside the buffers.
//
// A block of WEFT_FP8_GEMM_THREADS makes a 64 x 64 tile of C; the
// k-block's codes and scales pass through shared memory, each row padded
// to 12 words so that a warp's fragment reads (8 rows x 4 words) fall in
// 32 distinct banks.
extern "C" __global__ void weft_fp8_block_gemm(
    const unsigned char *__restrict A, const unsigned char *__restrict B,
    const float *__restrict scaleA, const float *__restrict scaleB, void *C,
    const int *__restrict sizes, long groups, long experts, long m, long n,
    long k, long lda, long ldb, long ldc, int modeA, int modeB, int e4m3A,
    int e4m3B, int bf16Out, int accumulate) {
  __shared__ unsigned tileA[WEFT_FP8_GEMM_TILE * WEFT_FP8_ROW];
  __shared__ unsigned tileB[WEFT_FP8_GEMM_TILE * WEFT_FP8_ROW];
  __shared__ float rowScale[WEFT_FP8_GEMM_TILE], colScale[WEFT_FP8_GEMM_TILE];
  // This block's rows: [row0, rowEnd) of A and C, times B's matrix expert.
  long tile = blockIdx.y, first = 0, rowEnd = m, expert = 0;
  int zero = 0;
  if (sizes) {
    long g = 0;
    for (; g < groups; ++g) {
      long size = sizes[g];
      size = size < 0 ? 0 : size > m - first ? m - first : size;
      long tiles = (size + WEFT_FP8_GEMM_TILE - 1) / WEFT_FP8_GEMM_TILE;
      if (tile < tiles) {
        rowEnd = first + size;
        expert = g % experts;
        break;
      }
      tile -= tiles;
      first += size;
    }
    zero = g == groups; // The rows after the groups.
  }
  long row0 = first + tile * WEFT_FP8_GEMM_TILE,
       col0 = (long)blockIdx.x * WEFT_FP8_GEMM_TILE;
  if (row0 >= rowEnd)
    return; // Uniform over the block: no barrier is left waiting.
  int tid = threadIdx.x;
  if (zero) {
    for (int i = tid; i < WEFT_FP8_GEMM_TILE * WEFT_FP8_GEMM_TILE;
         i += WEFT_FP8_GEMM_THREADS) {
      long row = row0 + i / WEFT_FP8_GEMM_TILE,
           col = col0 + i % WEFT_FP8_GEMM_TILE;
      if (row < rowEnd && col < n)
        weft_put(C, row * ldc + col, 0.0f, bf16Out);
    }
    return;
  }
  const unsigned char *Bg = B + expert * n * ldb;
  long rowsB = sizes ? experts * n : n;
  int aligned = (unsigned long)A % 4 == 0 && (unsigned long)B % 4 == 0 &&
                lda % 4 == 0 && ldb % 4 == 0;
  float acc[2][4][4] = {};
  for (long k0 = 0; k0 < k; k0 += 32) {
    __syncthreads(); // Every warp is done with the last k-block.
    // Thread tid loads half a row (16 codes) of each tile; rows past the
    // matrix are zeros with scale 0, computed and never stored.
    int r = tid / 2, half = tid % 2;
    long rowA = row0 + r, rowB = col0 + r;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      long at = k0 + half * 16 + 4 * w;
      tileA[r * WEFT_FP8_ROW + half * 4 + w] =
          rowA < rowEnd ? weft_codes4(A + rowA * lda + at, aligned) : 0u;
      tileB[r * WEFT_FP8_ROW + half * 4 + w] =
          rowB < n ? weft_codes4(Bg + rowB * ldb + at, aligned) : 0u;
    }
    if (tid < WEFT_FP8_GEMM_TILE) {
      long row = row0 + tid;
      rowScale[tid] = row < rowEnd
                          ? scaleA[weft_fp8_scale_index(modeA, row, k0, m, k)]
                          : 0.0f;
    } else if (tid < 2 * WEFT_FP8_GEMM_TILE) {
      long col = col0 + tid - WEFT_FP8_GEMM_TILE;
      colScale[tid - WEFT_FP8_GEMM_TILE] =
          col < n ? scaleB[weft_fp8_scale_index(modeB, expert * n + col, k0,
                                                rowsB, k)]
                  : 0.0f;
    }
    __syncthreads();
    weft_fp8_block_step(acc, tileA, tileB, rowScale, colScale, e4m3A, e4m3B);
  }
  weft_fp8_tile_store(acc, C, row0, rowEnd, col0, n, ldc, bf16Out, accumulate);
}

// An expert layer's FP8 weight gradient (sched.grouped_matmul_wgrad with
// scales): out[e] [p, q] = the sum over 32-row blocks b of expert e's rows
// of (A_b B_b^T) * sA(tile of b) * sB(tile of b), with A [p, n] and B
// [q, n] FP8 codes in expert-major order (sched.fp8_group_cast's: expert
// e's rows contiguous from its first, weft_fp8_expert_span), the last
// block of an expert zero-padded, and sA [T, p], sB [T, q] the inverse
// scales of tiles of `tile` of an expert's rows (weft_fp8_expert_tile; a
// multiple of 32, or 0 for all its rows). Blocks of
// WEFT_FP8_GEMM_THREADS make 64 x 64 of out[e], e = blockIdx.z, as
// weft_fp8_block_gemm's do; an expert with no rows gets zeros.
extern "C" __global__ void weft_fp8_group_wgrad(
    const unsigned char *__restrict A, const unsigned char *__restrict B,
    const float *__restrict scaleA, const float *__restrict scaleB, void *C,
    const int *__restrict sizes, long groups, long experts, long p, long q,
    long n, long tile, int e4m3A, int e4m3B, int bf16Out) {
  __shared__ unsigned tileA[WEFT_FP8_GEMM_TILE * WEFT_FP8_ROW];
  __shared__ unsigned tileB[WEFT_FP8_GEMM_TILE * WEFT_FP8_ROW];
  __shared__ float rowScale[WEFT_FP8_GEMM_TILE], colScale[WEFT_FP8_GEMM_TILE];
  long e = blockIdx.z, first, count;
  weft_fp8_expert_span(sizes, groups, experts, n, e, &first, &count);
  long row0 = (long)blockIdx.y * WEFT_FP8_GEMM_TILE,
       col0 = (long)blockIdx.x * WEFT_FP8_GEMM_TILE, end = first + count;
  int tid = threadIdx.x, r = tid / 2, half = tid % 2;
  int aligned = (unsigned long)A % 4 == 0 && (unsigned long)B % 4 == 0 &&
                n % 4 == 0 && first % 4 == 0;
  float acc[2][4][4] = {};
  for (long k0 = 0; k0 < count; k0 += 32) {
    __syncthreads(); // Every warp is done with the last k-block.
    long rowA = row0 + r, rowB = col0 + r;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      long at = first + k0 + half * 16 + 4 * w;
      tileA[r * WEFT_FP8_ROW + half * 4 + w] =
          rowA < p ? weft_codes4_upto(A + rowA * n, at, end, aligned) : 0u;
      tileB[r * WEFT_FP8_ROW + half * 4 + w] =
          rowB < q ? weft_codes4_upto(B + rowB * n, at, end, aligned) : 0u;
    }
    long t = weft_fp8_expert_tile(first, e, k0, tile);
    if (tid < WEFT_FP8_GEMM_TILE)
      rowScale[tid] = row0 + tid < p ? scaleA[t * p + row0 + tid] : 0.0f;
    else if (tid < 2 * WEFT_FP8_GEMM_TILE)
      colScale[tid - WEFT_FP8_GEMM_TILE] =
          col0 + tid - WEFT_FP8_GEMM_TILE < q
              ? scaleB[t * q + col0 + tid - WEFT_FP8_GEMM_TILE]
              : 0.0f;
    __syncthreads();
    weft_fp8_block_step(acc, tileA, tileB, rowScale, colScale, e4m3A, e4m3B);
  }
  weft_fp8_tile_store(acc, (char *)C + e * p * q * (bf16Out ? 2 : 4), row0, p,
                      col0, q, q, bf16Out, 0);
}

// weft.fp8_group_quantize (values) and sched.fp8_group_cast (codes): one
// thread per column c and expert e = blockIdx.y runs
// weft_fp8_expert_column (Fp8Scaling.h, as the CPU does), walking the
// expert's rows down the column. For values, blocks with blockIdx.y ==
// experts zero the rows after the groups.
extern "C" __global__ void
weft_fp8_group_cast(const float *__restrict x, const int *__restrict sizes,
                    long groups, long experts, long n, long cols, long tile,
                    int e4m3, int pow2, float *values, unsigned char *codes,
                    float *scaleInv) {
  long c = (long)blockIdx.x * blockDim.x + threadIdx.x, e = blockIdx.y;
  if (c >= cols)
    return;
  if (e < experts) {
    weft_fp8_expert_column(x, sizes, groups, experts, n, cols, tile, e, c, e4m3,
                           pow2, values, codes, scaleInv);
    return;
  }
  long total = 0;
  for (long g = 0; g < groups; ++g)
    total += weft_fp8_group_size(sizes, g, total, n);
  for (long r = total; r < n; ++r)
    values[r * cols + c] = 0.0f;
}

// weft.one_hot: y[i, c] = 1 where ids[i] == c.
extern "C" __global__ void weft_one_hot(const int *__restrict ids,
                                        float *__restrict y, long n,
                                        long classes) {
  for (long i = weft_thread(); i < n * classes; i += weft_stride())
    y[i] = ids[i / classes] == i % classes ? 1.0f : 0.0f;
}

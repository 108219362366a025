//===- CpuMath.h - the CPU runtime's math on typed pointers -----*- C++ -*-===//
//
// The library kernels' arithmetic (attention, cross-entropy, reductions,
// norms, RoPE, MoE routing...) as functions of plain pointers and shapes,
// so the v1 step kernels (Kernels.cpp) and the v2 instruction executor
// (SchedExecutor.cpp) compute every element the same way. Arithmetic is done
// in double and stored as float (the reference evaluator's fp32 mode); GEMMs
// inside attention go to OpenBLAS.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_CPUMATH_H
#define WEFT_RUNTIME_EXEC_CPUMATH_H

#include "runtime/support/CounterRng.h"

#include "absl/status/status.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace weft::runtime::cpu {

using Shape = std::vector<int64_t>;

/// Attention operands: q [B, S, Hq, D], k [B, T, Hkv, D], v [B, T, Hkv, Dv],
/// out [B, S, Hq, Dv], lse [B, Hq, S].
struct AttentionShape {
  int64_t batch, s, hq, d, t, hkv, dv;
  /// Row strides of q (and dq), k (dk), v (dv) and o (dO): a position's
  /// heads are consecutive in [B, S, H, D].
  int64_t ldq, ldk, ldv, ldo;
  AttentionShape(const Shape &q, const Shape &k, const Shape &v)
      : batch(q[0]), s(q[1]), hq(q[2]), d(q[3]), t(k[1]), hkv(k[2]), dv(v[3]),
        ldq(hq * d), ldk(hkv * d), ldv(hkv * dv), ldo(hq * dv) {}
  /// The key/value head query head `h` reads.
  int64_t kvHead(int64_t h) const { return h / (hq / hkv); }
  /// Offsets of the first row of (batch b, query head h) in each tensor.
  int64_t queryAt(int64_t b, int64_t h) const { return b * s * ldq + h * d; }
  int64_t keyAt(int64_t b, int64_t h) const {
    return b * t * ldk + kvHead(h) * d;
  }
  int64_t valueAt(int64_t b, int64_t h) const {
    return b * t * ldv + kvHead(h) * dv;
  }
  int64_t outAt(int64_t b, int64_t h) const { return b * s * ldo + h * dv; }
};

/// For every element of `outShape` in row-major order, the flat input index
/// given per-dimension input strides (0 for broadcast dimensions).
std::vector<int64_t> gatherIndex(const Shape &outShape, const Shape &inStrides,
                                 int64_t base = 0);

/// Which keys each query sees: all; causal by index (key t visible to
/// query s iff t <= s + T - S); or, with positions ([S] and [T]), causal by
/// position (kpos[t] <= qpos[s]). A query that sees no key gets a zero row
/// and lse -inf.
struct AttentionMask {
  bool causal = false;
  const int32_t *queryPositions = nullptr, *keyPositions = nullptr;
  /// Dropout of the probabilities (rate 0: none; CounterRng.h).
  weft_attn_dropout dropout{};
};

/// FlashAttention's forward (tiles of queries, running max and sum). With
/// `entropy` ([B, Hq, S], may be null), each row's entropy of the
/// undropped probabilities too, from a running sum of p (x - m).
void attentionForward(const AttentionShape &a, float scale,
                      const AttentionMask &mask, const float *q, const float *k,
                      const float *v, float *out, float *lse,
                      float *entropy = nullptr);
/// Its backward, recomputing probabilities from `lse`; writes dq, dk, dv.
/// `lseGrad` (or null) is the gradient of lse itself ([B, Hq, S]).
void attentionBackward(const AttentionShape &a, float scale,
                       const AttentionMask &mask, const float *q,
                       const float *k, const float *v, const float *o,
                       const float *lse, const float *dout,
                       const float *lseGrad, float *dq, float *dk, float *dv);

enum class ReduceKind { Sum, Mean, Max };

/// A reduction over `dims` of a tensor of `shape`, its index walk computed
/// once; accumulates in double (max propagates NaN).
class ReducePlan {
public:
  ReducePlan(const Shape &shape, const Shape &dims, ReduceKind kind);
  void run(const float *x, float *y) const;

private:
  ReduceKind kind;
  int64_t count = 1, outSize = 1;
  /// Where each input element lands; empty for a reduction to one value,
  /// which runs as a plain loop in the same order.
  std::vector<int64_t> target;
  /// Kept between runs: a fresh large vector per call would be new mmap'd
  /// pages, zeroed by the kernel, every step.
  mutable std::vector<double> acc;
};

/// LayerNorm (with `bias`) or RMSNorm (bias null) of `rows` rows of `dim`.
void normForward(const float *x, const float *w, const float *bias, float *y,
                 int64_t rows, int64_t dim, bool rms, double eps);
/// Its backward: dx, dw and, for LayerNorm, db (null for RMSNorm).
void normBackward(const float *x, const float *w, const float *dy, float *dx,
                  float *dw, float *db, int64_t rows, int64_t dim, bool rms,
                  double eps);

/// Softmax of `x` (of `shape`) along `dim`.
void softmax(const float *x, float *y, const Shape &shape, int64_t dim);

/// Rotary embedding of x [B, S, H, D], positions starting at `offset`.
void rope(const float *x, float *y, const Shape &shape, double theta,
          int64_t offset, bool inverse, const int32_t *positions = nullptr);

/// Zeroes elements whose counter-based draw is below `rate`, scales the rest.
/// `x` is a block of the global tensor the mask is drawn for (four
/// dimensions: sizes `local`, starting at `start` of sizes `global`; see
/// CounterRng.h's weft_global_index).
void dropout(const float *x, float *y, double rate, uint64_t seed,
             const long long local[4], const long long start[4],
             const long long global[4], const int32_t *positions = nullptr,
             int positionsDim = 1);

/// weft.fp8_amax: the largest |x| of each block of x (of `shape`), the
/// blocks laid out as `grid` (amax's shape, dividing `shape`).
void fp8Amax(const float *x, float *amax, const Shape &shape,
             const Shape &grid);
/// weft.fp8_quantize: each block of x quantize-dequantized with the scale
/// of its maximum in `amax` (runtime/support/Fp8Scaling.h).
void fp8Quantize(const float *x, const float *amax, float *y,
                 const Shape &shape, const Shape &grid, bool e4m3, bool pow2);
/// sched.fp8_encode: the FP8 code of each element of x by its block's
/// scale, as fp8Quantize blocks it.
void fp8Encode(const float *x, const float *amax, uint8_t *codes,
               const Shape &shape, const Shape &grid, bool e4m3, bool pow2);
/// sched.fp8_decode: the values of `codes` (fp8Encode's) by their blocks'
/// scales: what fp8Quantize writes for the values encoded, to the bit.
void fp8Decode(const uint8_t *codes, const float *amax, float *y,
               const Shape &shape, const Shape &grid, bool e4m3, bool pow2);

/// A vocabulary block: rows (or columns) [offset, offset + local) of
/// `total`; `combine` all-reduces floats over the block's group (max or
/// sum), null when the vocabulary is whole.
struct VocabRange {
  int64_t offset = 0, total = 0;
  std::function<absl::Status(float *data, size_t count, bool max)> combine;
};

/// rows[i] = table[ids[i] - offset] (zeros outside the block); with `grad`,
/// table (zeroed first) += rows at the ids instead. `what` names the op.
absl::Status embedding(bool grad, float *table, int64_t vocab, int64_t dim,
                       const int32_t *ids, int64_t count, float *rows,
                       const VocabRange &block, const char *what);

/// Scratch a cross-entropy keeps between runs (row maxima, sums, targets).
struct CrossEntropyScratch {
  std::vector<float> m, st;
};

/// Mean cross-entropy of `rows` rows of `vocab` logits against `labels`
/// into out[0]; with `dloss` (the gradient's seed), the gradient of the
/// logits into `out` instead. Rows whose label is `ignore` do not count.
absl::Status crossEntropy(const float *logits, const int32_t *labels,
                          int64_t rows, int64_t vocab, int64_t ignore,
                          const float *dloss, float *out,
                          const VocabRange &block, CrossEntropyScratch &scratch,
                          const char *what);

/// One-hot rows of `classes` for `n` ids (ids outside give zero rows).
void oneHot(const int32_t *ids, int64_t n, int64_t classes, float *y);

/// The k largest of each of `rows` rows of `n` (with `gating`, of the row's
/// softmax, renormalised over the chosen k with `normalize`).
void topk(const float *x, int64_t rows, int64_t n, int64_t k, bool gating,
          bool normalize, float *values, int32_t *ids);

/// All-gathers `count` i32 per rank of the route's token group, in group
/// order (expert_route's counts exchange).
using GatherCounts =
    std::function<absl::Status(const int32_t *mine, int32_t *all, size_t)>;

/// weft.expert_route over `ids` [tokens, k] for member `groupRank` of a
/// token group of `groupSize` (1: one rank; `gather` then unused):
/// `positions` [tokens, k] and `counts` [experts]. capacity 0: dropless.
/// `routed` (if given, [experts]) is increased by the pairs the whole
/// group routed to each expert, dropped ones included.
absl::Status expertRoute(const int32_t *ids, int64_t tokens, int64_t k,
                         int64_t experts, int64_t capacity, int64_t groupSize,
                         int64_t groupRank, const GatherCounts &gather,
                         int32_t *positions, int32_t *counts, int64_t *routed,
                         const char *what);

/// How rows move between routing pairs (t, j) and packed rows.
enum class ExpertMove {
  Dispatch, // [T, D] tokens -> [N, D] rows.
  Scatter,  // [T, k, D] pairs -> rows.
  Combine,  // rows -> [T, D], weighted by [T, k].
  Gather,   // rows -> [T, k, D] pairs.
};

/// Moves rows between the pairs of `positions` [pairs / k, k] and `rows`
/// packed rows of `dim`; fails on a position outside [-1, rows) and, when
/// writing rows, on a row two pairs name.
absl::Status expertMove(ExpertMove move, const float *src,
                        const int32_t *positions, int64_t pairs, int64_t k,
                        const float *weights, float *dst, int64_t dstSize,
                        int64_t rows, int64_t dim, const char *what);

/// weft.grouped_matmul: out [n, m] = the groups of `sizes` [groups] rows
/// of x [n, kDim] times w[g mod experts] ([experts, kDim, m], or
/// [experts, m, kDim] with `transposeRhs`); rows after the groups zero.
absl::Status groupedMatmul(const float *x, const float *w, const int32_t *sizes,
                           int64_t groups, int64_t experts, int64_t n,
                           int64_t kDim, int64_t m, bool transposeRhs,
                           float *out, const char *what);

/// weft.fp8_group_quantize and sched.fp8_group_cast: x [n, cols] in the
/// groups of `sizes` of `experts` experts, each expert's rows cut into
/// tiles of `tileRows` (0: all of them), each tile's column a block scaled
/// by its own maximum (runtime/support/Fp8Scaling.h's
/// weft_fp8_expert_column). Writes the dequantized values into `values`
/// [n, cols] (rows after the groups zero) or the codes, transposed and
/// expert-major, into `codes` [cols, n] with each block's 1 / s in
/// `scaleInv` [T, cols] (weft_fp8_group_tiles).
absl::Status fp8GroupQuantize(const float *x, const int32_t *sizes,
                              int64_t groups, int64_t experts, int64_t n,
                              int64_t cols, int64_t tileRows, bool e4m3,
                              bool pow2, float *values, uint8_t *codes,
                              float *scaleInv, const char *what);

/// weft.grouped_matmul_wgrad: out [experts, p, q] = per expert the sum of
/// its groups' a_g^T b_g, a [n, p] and b [n, q].
absl::Status groupedMatmulWgrad(const float *a, const float *b,
                                const int32_t *sizes, int64_t groups,
                                int64_t experts, int64_t n, int64_t p,
                                int64_t q, float *out, const char *what);

} // namespace weft::runtime::cpu

#endif // WEFT_RUNTIME_EXEC_CPUMATH_H

//===- CpuMath.cpp - the CPU runtime's math on typed pointers -------------===//

#include "runtime/exec/CpuMath.h"

#include "runtime/support/Shapes.h"

#include "runtime/support/Fp8Scaling.h"
#include "runtime/support/GroupedRows.h"
#include "runtime/support/Random.h"

#include "absl/base/casts.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace weft::runtime::cpu {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Tile sizes of the attention kernels: a 64 x 64 score tile of floats
/// (16 KiB) stays in L1/L2 while GEMMs fill and consume it.
constexpr int64_t kQueryTile = 64, kKeyTile = 64;

/// One tile of scaled scores, s = scale * Q[i0:i0+bq] K[j0:j0+bk]^T, from
/// strided views of the [B, S, H, D] tensors; returns, through `visible`,
/// how many of the tile's keys each query row may see. With positions,
/// hidden scores are -inf and every row counts the whole tile.
void scoreTile(const AttentionShape &a, const AttentionMask &mask, float scale,
               const float *qh, int64_t ldq, const float *kh, int64_t ldk,
               int64_t i0, int64_t bq, int64_t j0, int64_t bk, float *s,
               int64_t *visible) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, a.d, scale,
              qh + i0 * ldq, ldq, kh + j0 * ldk, ldk, 0.0f, s, bk);
  for (int64_t i = 0; i < bq; ++i) {
    visible[i] = mask.causal && !mask.queryPositions
                     ? std::min(bk, i0 + i + (a.t - a.s) + 1 - j0)
                     : bk;
    if (mask.queryPositions)
      for (int64_t j = 0; j < bk; ++j)
        if (mask.keyPositions[j0 + j] > mask.queryPositions[i0 + i])
          s[i * bk + j] = -INFINITY;
  }
}

/// How many keys from the first may be visible to queries [i0, i0 + bq):
/// by index, those up to the last query's; with positions, any key.
int64_t keysFor(const AttentionShape &a, const AttentionMask &mask, int64_t i0,
                int64_t bq) {
  if (!mask.causal || mask.queryPositions)
    return a.t;
  return std::min(a.t, i0 + bq + (a.t - a.s));
}

/// Whether positions hide every key of [j0, j0 + bk) from every query of
/// [i0, i0 + bq): ring attention's blocks are half hidden, and skipping
/// them is what balances the ranks' work.
bool tileHidden(const AttentionMask &mask, int64_t i0, int64_t bq, int64_t j0,
                int64_t bk) {
  if (!mask.queryPositions)
    return false;
  int32_t latest = *std::max_element(mask.queryPositions + i0,
                                     mask.queryPositions + i0 + bq);
  int32_t earliest =
      *std::min_element(mask.keyPositions + j0, mask.keyPositions + j0 + bk);
  return earliest > latest;
}

/// Drops a tile of probabilities in place (dropout.rate 0: nothing): row i
/// is query i0 + i, column j key j0 + j. With `factors`, also keeps each
/// element's factor there.
void dropTile(const AttentionShape &a, const AttentionMask &mask, int64_t b,
              int64_t h, int64_t i0, int64_t bq, int64_t j0, int64_t bk,
              float *p, float *factors = nullptr) {
  if (mask.dropout.rate <= 0)
    return;
  for (int64_t i = 0; i < bq; ++i)
    for (int64_t j = 0; j < bk; ++j) {
      float keep =
          weft_attn_dropout_factor(&mask.dropout, b, h, i0 + i, a.s, j0 + j,
                                   a.t, mask.queryPositions, mask.keyPositions);
      p[i * bk + j] *= keep;
      if (factors)
        factors[i * bk + j] = keep;
    }
}

/// Top-k of one row (shared by topk and topk_gating).
void topkRow(const double *x, int64_t n, int64_t k, float *values,
             int32_t *ids) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return x[a] > x[b]; });
  for (int64_t j = 0; j < k; ++j) {
    values[j] = static_cast<float>(x[order[j]]);
    ids[j] = static_cast<int32_t>(order[j]);
  }
}

/// Mean (0 for RMSNorm) and 1/sqrt(variance + eps) of one row.
std::pair<double, double> rowStats(const float *x, int64_t dim, bool rms,
                                   double eps) {
  double mean = 0, var = 0;
  if (!rms) {
    for (int64_t j = 0; j < dim; ++j)
      mean += x[j];
    mean /= dim;
  }
  for (int64_t j = 0; j < dim; ++j)
    var += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(var / dim + eps)};
}

} // namespace

/// FlashAttention's forward on the CPU: for each (batch, head) and tile of
/// queries, walk the visible key tiles keeping a running row maximum m and
/// sum l; scores and P V go through sgemm on strided views of the
/// [B, S, H, D] tensors, so nothing of size S x S is ever stored.
void attentionForward(const AttentionShape &a, float scale,
                      const AttentionMask &mask, const float *q, const float *k,
                      const float *v, float *out, float *lse, float *entropy) {
  int64_t ldq = a.ldq, ldk = a.ldk, ldv = a.ldv, ldo = a.ldo;
  std::vector<float> s(kQueryTile * kKeyTile), acc(kQueryTile * a.dv);
  // e: the running sum of p (x - m) beside l's of p, for the entropy
  // log l - e / l (about log l, not lse less a number of its size).
  std::vector<float> m(kQueryTile), l(kQueryTile), e(kQueryTile);
  std::vector<int64_t> visible(kQueryTile);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.hq; ++h) {
      const float *qh = q + a.queryAt(b, h), *kh = k + a.keyAt(b, h),
                  *vh = v + a.valueAt(b, h);
      for (int64_t i0 = 0; i0 < a.s; i0 += kQueryTile) {
        int64_t bq = std::min(kQueryTile, a.s - i0);
        std::fill(m.begin(), m.end(), -INFINITY);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(e.begin(), e.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        int64_t keys = keysFor(a, mask, i0, bq);
        for (int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
          int64_t bk = std::min(kKeyTile, keys - j0);
          if (tileHidden(mask, i0, bq, j0, bk))
            continue;
          scoreTile(a, mask, scale, qh, ldq, kh, ldk, i0, bq, j0, bk, s.data(),
                    visible.data());
          for (int64_t i = 0; i < bq; ++i) {
            float *row = s.data() + i * bk;
            float mNew = m[i];
            for (int64_t j = 0; j < visible[i]; ++j)
              mNew = std::max(mNew, row[j]);
            if (mNew == -INFINITY) { // Nothing visible yet: zeros.
              std::fill(row, row + bk, 0.0f);
              continue;
            }
            float correction = std::exp(m[i] - mNew), sum = 0;
            if (entropy) {
              // The terms so far, moved from base m to mNew (none before
              // the first visible key).
              float moved =
                  l[i] > 0 ? correction * (e[i] - (mNew - m[i]) * l[i]) : 0.0f;
              for (int64_t j = 0; j < visible[i]; ++j) {
                // A key masked by position inside the visible span scores
                // -inf: p 0, and no 0 * -inf in the sum.
                float x = row[j] - mNew, p = std::exp(x);
                if (p > 0)
                  moved += p * x;
                sum += row[j] = p;
              }
              std::fill(row + visible[i], row + bk, 0.0f);
              e[i] = moved;
            } else {
              for (int64_t j = 0; j < bk; ++j)
                sum += row[j] = j < visible[i] ? std::exp(row[j] - mNew) : 0.0f;
            }
            l[i] = l[i] * correction + sum;
            m[i] = mNew;
            for (int64_t c = 0; c < a.dv; ++c)
              acc[i * a.dv + c] *= correction;
          }
          // The running sum is the undropped one; the values are weighed
          // by the dropped probabilities.
          dropTile(a, mask, b, h, i0, bq, j0, bk, s.data());
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, a.dv, bk,
                      1.0f, s.data(), bk, vh + j0 * ldv, ldv, 1.0f, acc.data(),
                      a.dv);
        }
        for (int64_t i = 0; i < bq; ++i) {
          float *o = out + (b * a.s + i0 + i) * ldo + h * a.dv;
          // A query that sees no key: a zero row, lse -inf.
          float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
          for (int64_t c = 0; c < a.dv; ++c)
            o[c] = acc[i * a.dv + c] * inv;
          lse[(b * a.hq + h) * a.s + i0 + i] =
              l[i] > 0 ? m[i] + std::log(l[i]) : -INFINITY;
          if (entropy)
            entropy[(b * a.hq + h) * a.s + i0 + i] =
                l[i] > 0 ? std::log(l[i]) - e[i] / l[i] : -INFINITY;
        }
      }
    }
}

/// FlashAttention's backward: probabilities are recomputed tile by tile
/// from the saved log-sum-exp; every product is an sgemm on strided views.
/// Grouped-query heads accumulate into their shared key/value head.
void attentionBackward(const AttentionShape &a, float scale,
                       const AttentionMask &mask, const float *q,
                       const float *k, const float *v, const float *o,
                       const float *lse, const float *dout,
                       const float *lseGrad, float *dq, float *dk, float *dv) {
  int64_t ldq = a.ldq, ldk = a.ldk, ldv = a.ldv, ldo = a.ldo;
  std::fill(dq, dq + a.batch * a.s * a.ldq, 0.0f);
  std::fill(dk, dk + a.batch * a.t * a.ldk, 0.0f);
  std::fill(dv, dv + a.batch * a.t * a.ldv, 0.0f);
  std::vector<float> p(kQueryTile * kKeyTile), dp(kQueryTile * kKeyTile),
      rowDot(kQueryTile);
  bool drops = mask.dropout.rate > 0;
  std::vector<float> dropped(drops ? kQueryTile * kKeyTile : 0),
      factors(dropped.size());
  std::vector<int64_t> visible(kQueryTile);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.hq; ++h) {
      const float *qh = q + a.queryAt(b, h), *kh = k + a.keyAt(b, h),
                  *vh = v + a.valueAt(b, h), *oh = o + a.outAt(b, h),
                  *doh = dout + a.outAt(b, h);
      float *dqh = dq + a.queryAt(b, h), *dkh = dk + a.keyAt(b, h),
            *dvh = dv + a.valueAt(b, h);
      const float *lseh = lse + (b * a.hq + h) * a.s;
      for (int64_t i0 = 0; i0 < a.s; i0 += kQueryTile) {
        int64_t bq = std::min(kQueryTile, a.s - i0);
        for (int64_t i = 0; i < bq; ++i) {
          double dot = 0;
          for (int64_t c = 0; c < a.dv; ++c)
            dot += static_cast<double>(doh[(i0 + i) * ldo + c]) *
                   oh[(i0 + i) * ldo + c];
          // The lse's own gradient: ds = p (dp - D + lse_grad).
          if (lseGrad)
            dot -= lseGrad[(b * a.hq + h) * a.s + i0 + i];
          rowDot[i] = static_cast<float>(dot);
        }
        int64_t keys = keysFor(a, mask, i0, bq);
        for (int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
          int64_t bk = std::min(kKeyTile, keys - j0);
          if (tileHidden(mask, i0, bq, j0, bk))
            continue;
          scoreTile(a, mask, scale, qh, ldq, kh, ldk, i0, bq, j0, bk, p.data(),
                    visible.data());
          for (int64_t i = 0; i < bq; ++i)
            for (int64_t j = 0; j < bk; ++j)
              p[i * bk + j] = j < visible[i] && lseh[i0 + i] != -INFINITY
                                  ? std::exp(p[i * bk + j] - lseh[i0 + i])
                                  : 0.0f;
          // With dropout, Pd = P M (M the mask's factors).
          const float *weights = p.data();
          if (drops) {
            std::copy(p.begin(), p.begin() + bq * bk, dropped.begin());
            dropTile(a, mask, b, h, i0, bq, j0, bk, dropped.data(),
                     factors.data());
            weights = dropped.data();
          }
          // dV += Pd^T dO;  dP = dO V^T.
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bk, a.dv, bq,
                      1.0f, weights, bk, doh + i0 * ldo, ldo, 1.0f,
                      dvh + j0 * ldv, ldv);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, a.dv,
                      1.0f, doh + i0 * ldo, ldo, vh + j0 * ldv, ldv, 0.0f,
                      dp.data(), bk);
          // dS = P (dP M - D) scale, in place in dp.
          for (int64_t i = 0; i < bq; ++i)
            for (int64_t j = 0; j < bk; ++j)
              dp[i * bk + j] = p[i * bk + j] *
                               ((drops ? dp[i * bk + j] * factors[i * bk + j]
                                       : dp[i * bk + j]) -
                                rowDot[i]) *
                               scale;
          // dQ += dS K;  dK += dS^T Q.
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, a.d, bk,
                      1.0f, dp.data(), bk, kh + j0 * ldk, ldk, 1.0f,
                      dqh + i0 * ldq, ldq);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bk, a.d, bq,
                      1.0f, dp.data(), bk, qh + i0 * ldq, ldq, 1.0f,
                      dkh + j0 * ldk, ldk);
        }
      }
    }
}

std::vector<int64_t> gatherIndex(const Shape &outShape, const Shape &inStrides,
                                 int64_t base) {
  std::vector<int64_t> index(product(outShape, 0, SIZE_MAX));
  Shape counter(outShape.size(), 0);
  int64_t off = base;
  for (size_t flat = 0; flat < index.size(); ++flat) {
    index[flat] = off;
    for (int64_t d = static_cast<int64_t>(outShape.size()) - 1; d >= 0; --d) {
      off += inStrides[d];
      if (++counter[d] < outShape[d])
        break;
      off -= inStrides[d] * outShape[d];
      counter[d] = 0;
    }
  }
  return index;
}

ReducePlan::ReducePlan(const Shape &in, const Shape &dims, ReduceKind kind)
    : kind(kind) {
  // Output strides seen from the input: 0 along reduced dimensions.
  Shape outStrides(in.size(), 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      count *= in[d];
      continue;
    }
    outStrides[d] = stride;
    stride *= in[d];
  }
  outSize = stride;
  if (outSize > 1)
    target = gatherIndex(in, outStrides);
  acc.resize(outSize);
}

void ReducePlan::run(const float *x, float *y) const {
  bool max = kind == ReduceKind::Max;
  std::fill(acc.begin(), acc.end(), max ? -kInf : 0.0);
  auto into = [max](double &slot, double v) {
    slot = max ? (std::isnan(v) || std::isnan(slot) ? NAN : std::max(slot, v))
               : slot + v;
  };
  if (outSize == 1) // Every element into one slot, in order.
    for (int64_t i = 0; i < count; ++i)
      into(acc[0], x[i]);
  else
    for (size_t i = 0; i < target.size(); ++i)
      into(acc[target[i]], x[i]);
  for (int64_t i = 0; i < outSize; ++i)
    y[i] =
        static_cast<float>(kind == ReduceKind::Mean ? acc[i] / count : acc[i]);
}

void normForward(const float *x, const float *w, const float *bias, float *y,
                 int64_t rows, int64_t dim, bool rms, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim;
    auto [mean, inv] = rowStats(xr, dim, rms, eps);
    for (int64_t j = 0; j < dim; ++j)
      y[r * dim + j] = static_cast<float>((xr[j] - mean) * inv * w[j] +
                                          (rms ? 0.0 : bias[j]));
  }
}

void normBackward(const float *x, const float *w, const float *dy, float *dx,
                  float *dw, float *db, int64_t rows, int64_t dim, bool rms,
                  double eps) {
  std::vector<double> gw(dim, 0.0), gb(dim, 0.0), xhat(dim), g(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim, *dyr = dy + r * dim;
    auto [mean, inv] = rowStats(xr, dim, rms, eps);
    double meanG = 0, meanGX = 0;
    for (int64_t j = 0; j < dim; ++j) {
      xhat[j] = (xr[j] - mean) * inv;
      g[j] = static_cast<double>(dyr[j]) * w[j];
      meanG += g[j];
      meanGX += g[j] * xhat[j];
      gw[j] += dyr[j] * xhat[j];
      gb[j] += dyr[j];
    }
    meanG /= dim;
    meanGX /= dim;
    for (int64_t j = 0; j < dim; ++j)
      dx[r * dim + j] = static_cast<float>(
          (g[j] - (rms ? 0.0 : meanG) - xhat[j] * meanGX) * inv);
  }
  for (int64_t j = 0; j < dim; ++j) {
    dw[j] = static_cast<float>(gw[j]);
    if (!rms)
      db[j] = static_cast<float>(gb[j]);
  }
}

void softmax(const float *x, float *y, const Shape &sh, int64_t dim) {
  int64_t n = sh[dim], inner = product(sh, dim + 1, SIZE_MAX),
          outer = product(sh, 0, dim);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const float *a = x + o * n * inner + in;
      float *b = y + o * n * inner + in;
      double m = -kInf, sum = 0;
      for (int64_t j = 0; j < n; ++j)
        m = std::max(m, static_cast<double>(a[j * inner]));
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(a[j * inner] - m);
      for (int64_t j = 0; j < n; ++j)
        b[j * inner] = static_cast<float>(std::exp(a[j * inner] - m) / sum);
    }
}

void rope(const float *x, float *y, const Shape &sh, double theta,
          int64_t offset, bool inverse, const int32_t *positions) {
  double sign = inverse ? -1.0 : 1.0;
  int64_t half = sh[3] / 2;
  for (int64_t b = 0; b < sh[0]; ++b)
    for (int64_t p = 0; p < sh[1]; ++p)
      for (int64_t h = 0; h < sh[2]; ++h) {
        int64_t base = ((b * sh[1] + p) * sh[2] + h) * sh[3];
        for (int64_t i = 0; i < half; ++i) {
          double at = positions ? positions[p] : static_cast<double>(p);
          double f = sign * (at + static_cast<double>(offset)) *
                     std::pow(theta, -2.0 * i / static_cast<double>(sh[3]));
          double x1 = x[base + i], x2 = x[base + i + half];
          y[base + i] = static_cast<float>(x1 * std::cos(f) - x2 * std::sin(f));
          y[base + i + half] =
              static_cast<float>(x2 * std::cos(f) + x1 * std::sin(f));
        }
      }
}

void dropout(const float *x, float *y, double rate, uint64_t seed,
             const long long local[4], const long long start[4],
             const long long global[4], const int32_t *positions,
             int positionsDim) {
  int64_t n = local[0] * local[1] * local[2] * local[3];
  bool whole = !positions;
  for (int d = 0; d < 4; ++d)
    whole &= start[d] == 0 && local[d] == global[d];
  for (int64_t i = 0; i < n; ++i) {
    uint64_t at = whole ? i
                        : weft_global_index(i, local, start, global, positions,
                                            positionsDim);
    y[i] = rate > 0 && uniform24(seed, at) < rate
               ? 0.0f
               : static_cast<float>(x[i] / (1.0 - rate));
  }
}

namespace {
/// Walks `shape` (row-major) one last-dimension row at a time, calling
/// fn(first, base, run) for the row starting at element `first`: its
/// element j lies in block base + j / run of the grid `grid` (row-major).
/// No per-element index is stored: a row's base is the sum of its
/// coordinates' block terms, kept up to date as the coordinates advance.
template <typename Fn>
void forEachBlockRow(const Shape &shape, const Shape &grid, Fn fn) {
  if (shape.empty())
    return fn(int64_t(0), int64_t(0), int64_t(1));
  auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> stride(rank, 1); // The grid's row-major strides.
  for (int64_t d = rank - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * grid[d + 1];
  int64_t last = shape.back(), run = last / grid.back();
  int64_t rows = product(shape, 0) / std::max<int64_t>(last, 1);
  std::vector<int64_t> at(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    for (int64_t d = 0; d + 1 < rank; ++d)
      base += at[d] / (shape[d] / grid[d]) * stride[d];
    fn(r * last, base, run);
    for (int64_t d = rank - 2; d >= 0 && ++at[d] == shape[d]; --d)
      at[d] = 0;
  }
}
} // namespace

void fp8Amax(const float *x, float *amax, const Shape &shape,
             const Shape &grid) {
  std::fill(amax, amax + product(grid, 0), 0.0f);
  if (product(grid, 0) == 1) {
    // One block: the largest magnitude's bits, an integer maximum the
    // compiler widens (a float one it may not reorder). Every NaN's bits
    // exceed infinity's, and a NaN counts as infinity.
    uint32_t m = 0;
    for (int64_t i = 0, n = product(shape, 0); i < n; ++i)
      m = std::max(m, absl::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
    amax[0] = m > 0x7f800000u ? INFINITY : absl::bit_cast<float>(m);
    return;
  }
  int64_t last = shape.empty() ? 1 : shape.back();
  // A NaN counts as infinity, which every max (Gloo's, NCCL's) keeps.
  forEachBlockRow(shape, grid, [&](int64_t first, int64_t base, int64_t run) {
    for (int64_t j = 0; j < last; ++j) {
      float a = std::fabs(x[first + j]), &m = amax[base + j / run];
      m = a != a ? INFINITY : std::max(a, m);
    }
  });
}

/// Calls fn(i, s) for each element i of a tensor of `shape`, s the scale
/// of its block (of `grid`, its maximum in `amax`).
template <typename Fn>
void forEachScaled(const float *amax, const Shape &shape, const Shape &grid,
                   bool e4m3, bool pow2, Fn fn) {
  std::vector<float> scale(product(grid, 0));
  for (size_t b = 0; b < scale.size(); ++b)
    scale[b] = weft_fp8_scale(amax[b], e4m3, pow2);
  int64_t last = shape.empty() ? 1 : shape.back();
  forEachBlockRow(shape, grid, [&](int64_t first, int64_t base, int64_t run) {
    for (int64_t j = 0; j < last; ++j)
      fn(first + j, scale[base + j / run]);
  });
}

void fp8Quantize(const float *x, const float *amax, float *y,
                 const Shape &shape, const Shape &grid, bool e4m3, bool pow2) {
  forEachScaled(amax, shape, grid, e4m3, pow2, [&](int64_t i, float s) {
    y[i] = weft_fp8_quantize(x[i], s, e4m3);
  });
}

void fp8Encode(const float *x, const float *amax, uint8_t *codes,
               const Shape &shape, const Shape &grid, bool e4m3, bool pow2) {
  forEachScaled(amax, shape, grid, e4m3, pow2, [&](int64_t i, float s) {
    codes[i] = weft_fp8_code(x[i], s, e4m3);
  });
}

void fp8Decode(const uint8_t *codes, const float *amax, float *y,
               const Shape &shape, const Shape &grid, bool e4m3, bool pow2) {
  forEachScaled(amax, shape, grid, e4m3, pow2, [&](int64_t i, float s) {
    y[i] = weft_fp8_decode(codes[i], s, e4m3);
  });
}

absl::Status embedding(bool grad, float *table, int64_t vocab, int64_t dim,
                       const int32_t *ids, int64_t count, float *rows,
                       const VocabRange &block, const char *what) {
  // A vocabulary block holds rows [offset, offset + vocab) of `total`:
  // ids elsewhere read zeros (another rank adds their rows).
  int64_t offset = block.offset, total = block.total ? block.total : vocab;
  if (grad)
    std::fill(table, table + vocab * dim, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= total)
      return absl::OutOfRangeError(
          absl::StrCat(what, ": token id ", id, " at position ", i,
                       " is outside [0, ", total, ")"));
    int64_t row = id - offset;
    bool mine = row >= 0 && row < vocab;
    if (grad && mine)
      for (int64_t d = 0; d < dim; ++d)
        table[row * dim + d] += rows[i * dim + d];
    else if (!grad && mine)
      std::memcpy(rows + i * dim, table + row * dim, dim * sizeof(float));
    else if (!grad)
      std::fill(rows + i * dim, rows + (i + 1) * dim, 0.0f);
  }
  return absl::OkStatus();
}

/// Row by row: the row max m, the sum of exponentials s and the target
/// logit t, then log s + m - t (or the softmax minus the one-hot). With a
/// vocabulary block, each rank holds columns [offset, offset + vocab) of
/// `total`, and m, s and t are combined across the block's group before use
/// (Megatron's vocabulary-parallel cross-entropy), so every rank gets the
/// whole loss.
absl::Status crossEntropy(const float *logits, const int32_t *labels,
                          int64_t rows, int64_t vocab, int64_t ignore,
                          const float *dloss, float *out,
                          const VocabRange &block, CrossEntropyScratch &scratch,
                          const char *what) {
  bool grad = dloss != nullptr;
  int64_t offset = block.offset, total = block.combine ? block.total : vocab;
  std::vector<float> &m = scratch.m, &st = scratch.st;
  m.resize(rows);
  st.resize(2 * rows);
  int64_t count = 0;
  for (int64_t n = 0; n < rows; ++n) {
    int64_t label = labels[n];
    if (label == ignore)
      continue;
    if (label < 0 || label >= total)
      return absl::OutOfRangeError(
          absl::StrCat(what, ": label ", label, " at position ", n,
                       " is outside [0, ", total, ")"));
    ++count;
  }
  float *sums = st.data(), *targets = st.data() + rows;
  for (int64_t n = 0; n < rows; ++n) {
    const float *x = logits + n * vocab;
    m[n] = *std::max_element(x, x + vocab);
  }
  if (block.combine)
    if (absl::Status status = block.combine(m.data(), rows, true); !status.ok())
      return status;
  for (int64_t n = 0; n < rows; ++n) {
    const float *x = logits + n * vocab;
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(x[j] - m[n]);
    sums[n] = static_cast<float>(sum);
    int64_t local = labels[n] - offset;
    targets[n] = local >= 0 && local < vocab ? x[local] : 0.0f;
  }
  if (block.combine)
    if (absl::Status status = block.combine(st.data(), 2 * rows, false);
        !status.ok())
      return status;
  double loss = 0, scale = grad ? dloss[0] / std::max<int64_t>(count, 1) : 0;
  for (int64_t n = 0; n < rows; ++n) {
    int64_t label = labels[n];
    if (!grad) {
      if (label != ignore)
        loss += std::log(sums[n]) + m[n] - targets[n];
      continue;
    }
    const float *x = logits + n * vocab;
    float *g = out + n * vocab;
    if (label == ignore) {
      std::fill(g, g + vocab, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < vocab; ++j)
      g[j] = static_cast<float>(
          (std::exp(x[j] - m[n]) / sums[n] - (j + offset == label)) * scale);
  }
  if (!grad)
    out[0] = static_cast<float>(count ? loss / count : 0.0);
  return absl::OkStatus();
}

void oneHot(const int32_t *ids, int64_t n, int64_t classes, float *y) {
  std::fill(y, y + n * classes, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] >= 0 && ids[i] < classes)
      y[i * classes + ids[i]] = 1.0f;
}

void topk(const float *x, int64_t rows, int64_t n, int64_t k, bool gating,
          bool normalize, float *values, int32_t *ids) {
  std::vector<double> row(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    double m = -kInf, sum = 0;
    for (int64_t j = 0; j < n; ++j)
      m = std::max(m, static_cast<double>(xr[j]));
    for (int64_t j = 0; j < n; ++j) {
      row[j] = gating ? std::exp(xr[j] - m) : xr[j];
      sum += row[j];
    }
    if (gating)
      for (double &p : row)
        p /= sum;
    topkRow(row.data(), n, k, values + r * k, ids + r * k);
    if (gating && normalize) {
      double chosen = 0;
      for (int64_t j = 0; j < k; ++j)
        chosen += row[ids[r * k + j]];
      for (int64_t j = 0; j < k; ++j)
        values[r * k + j] = static_cast<float>(row[ids[r * k + j]] / chosen);
    }
  }
}

absl::Status expertRoute(const int32_t *ids, int64_t tokens, int64_t k,
                         int64_t experts, int64_t capacity, int64_t groupSize,
                         int64_t groupRank, const GatherCounts &gather,
                         int32_t *positions, int32_t *counts, int64_t *routed,
                         const char *what) {
  // This rank's pairs per (choice, expert), then every member's.
  size_t cells = static_cast<size_t>(k * experts);
  std::vector<int32_t> mine(cells, 0), all(cells * groupSize, 0);
  for (int64_t p = 0; p < tokens * k; ++p) {
    int64_t e = ids[p];
    if (e < 0 || e >= experts)
      return absl::OutOfRangeError(
          absl::StrCat(what, ": expert id ", e, " at index ", p,
                       " is outside [0, ", experts, ")"));
    ++mine[(p % k) * experts + e];
  }
  if (groupSize > 1) {
    if (absl::Status s = gather(mine.data(), all.data(), cells); !s.ok())
      return s;
  } else {
    all = mine;
  }
  // GShard's order over the group's tokens: choice j of every token before
  // choice j + 1, and within a choice the members in order. `before` is
  // how many of expert e's pairs the group visits before this rank's
  // choice-j pairs.
  if (routed)
    for (size_t i = 0; i < all.size(); ++i)
      routed[i % experts] += all[i];
  std::vector<int64_t> before(cells, 0);
  for (int64_t e = 0; e < experts; ++e) {
    int64_t earlierChoices = 0; // Every member's pairs of choices < j.
    for (int64_t j = 0; j < k; ++j) {
      int64_t cell = j * experts + e, earlierMembers = 0, choice = 0;
      for (int64_t r = 0; r < groupSize; ++r) {
        choice += all[r * cells + cell];
        if (r < groupRank)
          earlierMembers += all[r * cells + cell];
      }
      before[cell] = earlierChoices + earlierMembers;
      earlierChoices += choice;
    }
  }
  int64_t limit = capacity > 0 ? capacity : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> seen(cells, 0), rank(tokens * k, -1), kept(experts, 0);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t p = t * k + j, e = ids[p], cell = j * experts + e;
      if (before[cell] + seen[cell]++ < limit)
        rank[p] = kept[e]++;
    }
  std::vector<int64_t> first(experts, 0);
  for (int64_t e = 1; e < experts; ++e)
    first[e] = first[e - 1] + kept[e - 1];
  for (int64_t p = 0; p < tokens * k; ++p)
    positions[p] =
        rank[p] < 0 ? -1 : static_cast<int32_t>(first[ids[p]] + rank[p]);
  for (int64_t e = 0; e < experts; ++e)
    counts[e] = static_cast<int32_t>(kept[e]);
  return absl::OkStatus();
}

absl::Status expertMove(ExpertMove move, const float *src,
                        const int32_t *positions, int64_t pairs, int64_t k,
                        const float *weights, float *dst, int64_t dstSize,
                        int64_t rows, int64_t dim, const char *what) {
  bool toRows = move == ExpertMove::Dispatch || move == ExpertMove::Scatter;
  std::vector<bool> written(toRows ? rows : 0, false);
  std::fill(dst, dst + dstSize, 0.0f);
  for (int64_t p = 0; p < pairs; ++p) {
    int64_t r = positions[p];
    if (r < -1 || r >= rows)
      return absl::OutOfRangeError(
          absl::StrCat(what, ": position ", r, " at index ", p,
                       " is outside [-1, ", rows, ")"));
    if (r < 0)
      continue;
    if (toRows) { // Dispatch reads [T, D]: pair p is token p / k.
      if (written[r])
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": row ", r, " is named by two positions"));
      written[r] = true;
      const float *row = src + (move == ExpertMove::Dispatch ? p / k : p) * dim;
      std::memcpy(dst + r * dim, row, dim * sizeof(float));
    } else if (move == ExpertMove::Combine) {
      float *row = dst + (p / k) * dim;
      for (int64_t d = 0; d < dim; ++d)
        row[d] += weights[p] * src[r * dim + d];
    } else {
      std::memcpy(dst + p * dim, src + r * dim, dim * sizeof(float));
    }
  }
  return absl::OkStatus();
}

absl::Status groupedMatmul(const float *x, const float *w, const int32_t *sizes,
                           int64_t groups, int64_t experts, int64_t n,
                           int64_t kDim, int64_t m, bool transposeRhs,
                           float *out, const char *what) {
  absl::StatusOr<std::vector<int64_t>> starts =
      groupStarts(sizes, groups, n, what);
  if (!starts.ok())
    return starts.status();
  // One OpenBLAS call per non-empty group: only the routed rows are
  // computed, never a padded capacity.
  for (int64_t g = 0; g < groups; ++g) {
    int64_t begin = (*starts)[g], rows = (*starts)[g + 1] - begin;
    if (rows == 0)
      continue;
    cblas_sgemm(CblasRowMajor, CblasNoTrans,
                transposeRhs ? CblasTrans : CblasNoTrans, rows, m, kDim, 1.0f,
                x + begin * kDim, kDim, w + (g % experts) * kDim * m,
                transposeRhs ? kDim : m, 0.0f, out + begin * m, m);
  }
  std::fill(out + (*starts)[groups] * m, out + n * m, 0.0f);
  return absl::OkStatus();
}

absl::Status fp8GroupQuantize(const float *x, const int32_t *sizes,
                              int64_t groups, int64_t experts, int64_t n,
                              int64_t cols, int64_t tileRows, bool e4m3,
                              bool pow2, float *values, uint8_t *codes,
                              float *scaleInv, const char *what) {
  if (absl::Status s = groupStarts(sizes, groups, n, what).status(); !s.ok())
    return s;
  if (values)
    std::fill(values, values + n * cols, 0.0f);
  // Column by column, as a GPU thread takes one: a strided walk down x,
  // for checking, not speed.
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t c = 0; c < cols; ++c)
      weft_fp8_expert_column(x, sizes, groups, experts, n, cols, tileRows, e, c,
                             e4m3, pow2, values, codes, scaleInv);
  return absl::OkStatus();
}

absl::Status groupedMatmulWgrad(const float *a, const float *b,
                                const int32_t *sizes, int64_t groups,
                                int64_t experts, int64_t n, int64_t p,
                                int64_t q, float *out, const char *what) {
  absl::StatusOr<std::vector<int64_t>> starts =
      groupStarts(sizes, groups, n, what);
  if (!starts.ok())
    return starts.status();
  // An expert with no rows anywhere gets a zero gradient (Megatron-LM#1877).
  std::fill(out, out + experts * p * q, 0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    int64_t begin = (*starts)[g], rows = (*starts)[g + 1] - begin;
    if (rows == 0)
      continue;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, p, q, rows, 1.0f,
                a + begin * p, p, b + begin * q, q, 1.0f,
                out + (g % experts) * p * q, q);
  }
  return absl::OkStatus();
}

} // namespace weft::runtime::cpu

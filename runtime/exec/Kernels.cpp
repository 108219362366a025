//===- Kernels.cpp - the CPU kernels a bundle's steps call ----------------===//
//
// Each binder decodes its attributes and shapes once and returns a closure.
// Arithmetic is done in double and stored as float, which makes elementwise
// results identical to the reference evaluator's fp32 mode.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Kernels.h"

#include "runtime/exec/StepAttrs.h"

#include "runtime/support/Random.h"
#include "runtime/support/ScalarMath.h"

#include "absl/strings/str_cat.h"
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

namespace weft::runtime {
namespace {
using Shape = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// For every element of `outShape` in row-major order, the flat input index
/// given per-dimension input strides (0 for broadcast dimensions).
std::vector<int64_t> gatherIndex(const Shape &outShape, const Shape &inStrides,
                                 int64_t base = 0) {
  std::vector<int64_t> index(product(outShape));
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

absl::Status ok() { return absl::OkStatus(); }

template <typename Fn> Kernel unary(Buf x, Buf y, Fn fn) {
  return [=] {
    const float *a = x.f();
    float *o = y.f();
    for (int64_t i = 0, n = y.size(); i < n; ++i)
      o[i] = static_cast<float>(fn(static_cast<double>(a[i])));
    return ok();
  };
}

template <typename Fn> Kernel binary(Buf x, Buf y, Buf z, Fn fn) {
  return [=] {
    const float *a = x.f(), *b = y.f();
    float *o = z.f();
    for (int64_t i = 0, n = z.size(); i < n; ++i)
      o[i] = static_cast<float>(
          fn(static_cast<double>(a[i]), static_cast<double>(b[i])));
    return ok();
  };
}

/// Slot of each (token, choice) pair under weft.expert_dispatch's rule.
absl::StatusOr<std::vector<int64_t>> assignSlots(const int32_t *ids,
                                                 int64_t pairs, int64_t experts,
                                                 int64_t capacity,
                                                 const std::string &op) {
  std::vector<int64_t> fill(experts, 0), slots(pairs, -1);
  for (int64_t p = 0; p < pairs; ++p) {
    int64_t e = ids[p];
    if (e < 0 || e >= experts)
      return absl::OutOfRangeError(
          absl::StrCat(op, ": expert id ", e, " at index ", p,
                       " is outside [0, ", experts, ")"));
    if (fill[e] < capacity)
      slots[p] = fill[e]++;
  }
  return slots;
}

/// Softmax + top-k of one row (shared by topk and topk_gating).
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

absl::StatusOr<Kernel> bindMatmul(const StepSpec &s, Buf a, Buf b, Buf c) {
  bool ta = attrB(s, "transpose_lhs"), tb = attrB(s, "transpose_rhs");
  const Shape &as = a.shape(), &bs = b.shape();
  size_t ar = as.size(), br = bs.size();
  int64_t m = ta ? as[ar - 1] : as[ar - 2], k = ta ? as[ar - 2] : as[ar - 1];
  int64_t n = tb ? bs[br - 2] : bs[br - 1];
  int64_t batches = c.size() / (m * n);
  int64_t aStep = ar > 2 ? m * k : 0, bStep = br > 2 ? k * n : 0;
  // [B..., M, K] by one weight: the batches' rows are one [B... M, K]
  // matrix, so one GEMM does them all.
  if (bStep == 0 && !ta) {
    m *= batches;
    batches = 1;
  }
  return Kernel([=] {
    for (int64_t i = 0; i < batches; ++i)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                  tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                  a.f() + i * aStep, ta ? m : k, b.f() + i * bStep, tb ? k : n,
                  0.0f, c.f() + i * m * n, n);
    return ok();
  });
}

/// weft.matmul_epilogue: the GEMM into the result (into the aux for the
/// GELU kinds), then the epilogue over its f32 values.
absl::StatusOr<Kernel> bindMatmulEpilogue(const StepSpec &s,
                                          const std::vector<Buf> &in,
                                          const std::vector<Buf> &out) {
  GemmEpilogue kind = attrEpilogue(s);
  if (absl::Status st = checkEpilogueArity(s, kind); !st.ok())
    return st;
  bool withBias = epilogueHasBias(kind), dgelu = kind == GemmEpilogue::DGelu;
  bool withGelu = epilogueHasAux(kind) && !dgelu;
  Buf product = withGelu ? out[1] : out[0], y = out[0];
  absl::StatusOr<Kernel> gemm = bindMatmul(s, in[0], in[1], product);
  if (!gemm.ok())
    return gemm.status();
  int64_t n = y.shape().back();
  Buf extra = in.size() > 2 ? in[2] : Buf();
  return Kernel([=, gemm = *gemm]() -> absl::Status {
    if (absl::Status st = gemm(); !st.ok())
      return st;
    float *p = product.f(), *out = y.f();
    for (int64_t i = 0, size = y.size(); i < size; ++i) {
      double aux = 0;
      out[i] = static_cast<float>(
          epilogueElement(kind, p[i], withBias ? extra.f()[i % n] : 0.0,
                          dgelu ? extra.f()[i] : 0.0, &aux, roundToF32));
      if (withGelu) // The GELU input, where the GEMM wrote the product.
        p[i] = static_cast<float>(aux);
    }
    return ok();
  });
}

absl::StatusOr<Kernel> bindReduce(const StepSpec &s, Buf x, Buf y, int kind) {
  Shape dims = attrInts(s, "dims");
  const Shape &in = x.shape();
  // Output strides seen from the input: 0 along reduced dimensions.
  Shape outStrides(in.size(), 0);
  int64_t stride = 1, count = 1;
  for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      count *= in[d];
      continue;
    }
    outStrides[d] = stride;
    stride *= in[d];
  }
  std::vector<int64_t> target = gatherIndex(in, outStrides);
  // Scratch bound once: a fresh large vector per call would be new mmap'd
  // pages, zeroed by the kernel, every step.
  auto scratch = std::make_shared<std::vector<double>>(y.size());
  return Kernel([=] {
    std::vector<double> &acc = *scratch;
    std::fill(acc.begin(), acc.end(), kind == 2 ? -kInf : 0.0);
    const float *a = x.f();
    for (size_t i = 0; i < target.size(); ++i) {
      double v = a[i];
      double &slot = acc[target[i]];
      slot = kind == 2
                 ? (std::isnan(v) || std::isnan(slot) ? NAN : std::max(slot, v))
                 : slot + v;
    }
    for (int64_t i = 0; i < y.size(); ++i)
      y.f()[i] = static_cast<float>(kind == 1 ? acc[i] / count : acc[i]);
    return ok();
  });
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

/// Rows of the last dimension for the norms.
absl::StatusOr<Kernel> bindNorm(const StepSpec &s, const std::vector<Buf> &in,
                                const std::vector<Buf> &out, bool rms,
                                bool grad) {
  double eps = attrF(s, "epsilon", rms ? 1e-6 : 1e-5);
  Buf x = in[0], w = in[1];
  int64_t dim = x.shape().back(), rows = x.size() / dim;
  if (!grad) {
    Buf bias = rms ? Buf() : in[2], y = out[0];
    return Kernel([=] {
      for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x.f() + r * dim;
        auto [mean, inv] = rowStats(xr, dim, rms, eps);
        for (int64_t j = 0; j < dim; ++j)
          y.f()[r * dim + j] = static_cast<float>(
              (xr[j] - mean) * inv * w.f()[j] + (rms ? 0.0 : bias.f()[j]));
      }
      return ok();
    });
  }
  Buf dy = in[2], dx = out[0], dw = out[1], db = rms ? Buf() : out[2];
  return Kernel([=] {
    std::vector<double> gw(dim, 0.0), gb(dim, 0.0), xhat(dim), g(dim);
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x.f() + r * dim, *dyr = dy.f() + r * dim;
      auto [mean, inv] = rowStats(xr, dim, rms, eps);
      double meanG = 0, meanGX = 0;
      for (int64_t j = 0; j < dim; ++j) {
        xhat[j] = (xr[j] - mean) * inv;
        g[j] = static_cast<double>(dyr[j]) * w.f()[j];
        meanG += g[j];
        meanGX += g[j] * xhat[j];
        gw[j] += dyr[j] * xhat[j];
        gb[j] += dyr[j];
      }
      meanG /= dim;
      meanGX /= dim;
      for (int64_t j = 0; j < dim; ++j)
        dx.f()[r * dim + j] = static_cast<float>(
            (g[j] - (rms ? 0.0 : meanG) - xhat[j] * meanGX) * inv);
    }
    for (int64_t j = 0; j < dim; ++j) {
      dw.f()[j] = static_cast<float>(gw[j]);
      if (!rms)
        db.f()[j] = static_cast<float>(gb[j]);
    }
    return ok();
  });
}

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

/// Tile sizes of the attention kernels: a 64 x 64 score tile of floats
/// (16 KiB) stays in L1/L2 while GEMMs fill and consume it.
constexpr int64_t kQueryTile = 64, kKeyTile = 64;

/// One tile of scaled scores, s = scale * Q[i0:i0+bq] K[j0:j0+bk]^T, from
/// strided views of the [B, S, H, D] tensors; returns, through `visible`,
/// how many of the tile's keys each query row may see.
void scoreTile(const AttentionShape &a, bool causal, float scale,
               const float *qh, int64_t ldq, const float *kh, int64_t ldk,
               int64_t i0, int64_t bq, int64_t j0, int64_t bk, float *s,
               int64_t *visible) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, a.d, scale,
              qh + i0 * ldq, ldq, kh + j0 * ldk, ldk, 0.0f, s, bk);
  for (int64_t i = 0; i < bq; ++i)
    visible[i] = causal ? std::min(bk, i0 + i + (a.t - a.s) + 1 - j0) : bk;
}

/// FlashAttention's forward on the CPU: for each (batch, head) and tile of
/// queries, walk the visible key tiles keeping a running row maximum m and
/// sum l; scores and P V go through sgemm on strided views of the
/// [B, S, H, D] tensors, so nothing of size S x S is ever stored.
absl::StatusOr<Kernel> bindAttention(const StepSpec &st, Buf q, Buf k, Buf v,
                                     Buf out, Buf lse) {
  AttentionShape a(q.shape(), k.shape(), v.shape());
  float scale = static_cast<float>(attrF(st, "scale"));
  bool causal = attrB(st, "causal");
  return Kernel([=] {
    int64_t ldq = a.ldq, ldk = a.ldk, ldv = a.ldv, ldo = a.ldo;
    std::vector<float> s(kQueryTile * kKeyTile), acc(kQueryTile * a.dv);
    std::vector<float> m(kQueryTile), l(kQueryTile);
    std::vector<int64_t> visible(kQueryTile);
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.hq; ++h) {
        const float *qh = q.f() + a.queryAt(b, h), *kh = k.f() + a.keyAt(b, h),
                    *vh = v.f() + a.valueAt(b, h);
        for (int64_t i0 = 0; i0 < a.s; i0 += kQueryTile) {
          int64_t bq = std::min(kQueryTile, a.s - i0);
          std::fill(m.begin(), m.end(), -INFINITY);
          std::fill(l.begin(), l.end(), 0.0f);
          std::fill(acc.begin(), acc.end(), 0.0f);
          // Keys visible to the last query of the tile.
          int64_t keys = causal ? std::min(a.t, i0 + bq + (a.t - a.s)) : a.t;
          for (int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
            int64_t bk = std::min(kKeyTile, keys - j0);
            scoreTile(a, causal, scale, qh, ldq, kh, ldk, i0, bq, j0, bk,
                      s.data(), visible.data());
            for (int64_t i = 0; i < bq; ++i) {
              float *row = s.data() + i * bk;
              float mNew = m[i];
              for (int64_t j = 0; j < visible[i]; ++j)
                mNew = std::max(mNew, row[j]);
              float correction = std::exp(m[i] - mNew), sum = 0;
              for (int64_t j = 0; j < bk; ++j)
                sum += row[j] = j < visible[i] ? std::exp(row[j] - mNew) : 0.0f;
              l[i] = l[i] * correction + sum;
              m[i] = mNew;
              for (int64_t c = 0; c < a.dv; ++c)
                acc[i * a.dv + c] *= correction;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, a.dv, bk,
                        1.0f, s.data(), bk, vh + j0 * ldv, ldv, 1.0f,
                        acc.data(), a.dv);
          }
          for (int64_t i = 0; i < bq; ++i) {
            float *o = out.f() + (b * a.s + i0 + i) * ldo + h * a.dv;
            for (int64_t c = 0; c < a.dv; ++c)
              o[c] = acc[i * a.dv + c] / l[i];
            lse.f()[(b * a.hq + h) * a.s + i0 + i] = m[i] + std::log(l[i]);
          }
        }
      }
    return ok();
  });
}

/// FlashAttention's backward: probabilities are recomputed tile by tile
/// from the saved log-sum-exp; every product is an sgemm on strided views.
/// Grouped-query heads accumulate into their shared key/value head.
absl::StatusOr<Kernel> bindAttentionGrad(const StepSpec &st,
                                         const std::vector<Buf> &in,
                                         const std::vector<Buf> &out) {
  Buf q = in[0], k = in[1], v = in[2], o = in[3], lse = in[4], dout = in[5];
  Buf dq = out[0], dk = out[1], dv = out[2];
  AttentionShape a(q.shape(), k.shape(), v.shape());
  float scale = static_cast<float>(attrF(st, "scale"));
  bool causal = attrB(st, "causal");
  return Kernel([=] {
    int64_t ldq = a.ldq, ldk = a.ldk, ldv = a.ldv, ldo = a.ldo;
    std::fill(dq.f(), dq.f() + dq.size(), 0.0f);
    std::fill(dk.f(), dk.f() + dk.size(), 0.0f);
    std::fill(dv.f(), dv.f() + dv.size(), 0.0f);
    std::vector<float> p(kQueryTile * kKeyTile), dp(kQueryTile * kKeyTile),
        rowDot(kQueryTile);
    std::vector<int64_t> visible(kQueryTile);
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.hq; ++h) {
        const float *qh = q.f() + a.queryAt(b, h), *kh = k.f() + a.keyAt(b, h),
                    *vh = v.f() + a.valueAt(b, h), *oh = o.f() + a.outAt(b, h),
                    *doh = dout.f() + a.outAt(b, h);
        float *dqh = dq.f() + a.queryAt(b, h), *dkh = dk.f() + a.keyAt(b, h),
              *dvh = dv.f() + a.valueAt(b, h);
        const float *lseh = lse.f() + (b * a.hq + h) * a.s;
        for (int64_t i0 = 0; i0 < a.s; i0 += kQueryTile) {
          int64_t bq = std::min(kQueryTile, a.s - i0);
          for (int64_t i = 0; i < bq; ++i) {
            double dot = 0;
            for (int64_t c = 0; c < a.dv; ++c)
              dot += static_cast<double>(doh[(i0 + i) * ldo + c]) *
                     oh[(i0 + i) * ldo + c];
            rowDot[i] = static_cast<float>(dot);
          }
          int64_t keys = causal ? std::min(a.t, i0 + bq + (a.t - a.s)) : a.t;
          for (int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
            int64_t bk = std::min(kKeyTile, keys - j0);
            scoreTile(a, causal, scale, qh, ldq, kh, ldk, i0, bq, j0, bk,
                      p.data(), visible.data());
            for (int64_t i = 0; i < bq; ++i)
              for (int64_t j = 0; j < bk; ++j)
                p[i * bk + j] = j < visible[i]
                                    ? std::exp(p[i * bk + j] - lseh[i0 + i])
                                    : 0.0f;
            // dV += P^T dO;  dP = dO V^T.
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bk, a.dv, bq,
                        1.0f, p.data(), bk, doh + i0 * ldo, ldo, 1.0f,
                        dvh + j0 * ldv, ldv);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, a.dv,
                        1.0f, doh + i0 * ldo, ldo, vh + j0 * ldv, ldv, 0.0f,
                        dp.data(), bk);
            // dS = P (dP - D) scale, in place in dp.
            for (int64_t i = 0; i < bq; ++i)
              for (int64_t j = 0; j < bk; ++j)
                dp[i * bk + j] =
                    p[i * bk + j] * (dp[i * bk + j] - rowDot[i]) * scale;
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
    return ok();
  });
}

/// Cross-entropy and its gradient, row by row: the row max m, the sum of
/// exponentials s and the target logit t, then log s + m - t (or the
/// softmax minus the one-hot). With a vocabulary block, each rank holds
/// columns [offset, offset + vocab) of `total`, and m, s and t are combined
/// across the block's group before use (Megatron's vocabulary-parallel
/// cross-entropy), so every rank gets the whole loss.
absl::StatusOr<Kernel> bindCrossEntropy(const StepSpec &s,
                                        const std::vector<Buf> &in, Buf out,
                                        bool grad, const VocabBlock &block) {
  Buf logits = in[0], labels = in[1];
  int64_t vocab = logits.shape().back(), rows = labels.size();
  int64_t offset = block.offset, total = block.combine ? block.total : vocab;
  int64_t ignore = attrI(s, "ignore_index", -100);
  Buf seed = grad ? in[2] : Buf();
  std::string op = s.op;
  auto m = std::make_shared<std::vector<float>>(rows),
       st = std::make_shared<std::vector<float>>(2 * rows);
  return Kernel([=]() -> absl::Status {
    int64_t count = 0;
    for (int64_t n = 0; n < rows; ++n) {
      int64_t label = labels.i()[n];
      if (label == ignore)
        continue;
      if (label < 0 || label >= total)
        return absl::OutOfRangeError(
            absl::StrCat(op, ": label ", label, " at position ", n,
                         " is outside [0, ", total, ")"));
      ++count;
    }
    float *sums = st->data(), *targets = st->data() + rows;
    for (int64_t n = 0; n < rows; ++n) {
      const float *x = logits.f() + n * vocab;
      (*m)[n] = *std::max_element(x, x + vocab);
    }
    if (block.combine)
      if (absl::Status status = block.combine(m->data(), rows, true);
          !status.ok())
        return status;
    for (int64_t n = 0; n < rows; ++n) {
      const float *x = logits.f() + n * vocab;
      double sum = 0;
      for (int64_t j = 0; j < vocab; ++j)
        sum += std::exp(x[j] - (*m)[n]);
      sums[n] = static_cast<float>(sum);
      int64_t local = labels.i()[n] - offset;
      targets[n] = local >= 0 && local < vocab ? x[local] : 0.0f;
    }
    if (block.combine)
      if (absl::Status status = block.combine(st->data(), 2 * rows, false);
          !status.ok())
        return status;
    double loss = 0,
           scale = grad ? seed.f()[0] / std::max<int64_t>(count, 1) : 0;
    for (int64_t n = 0; n < rows; ++n) {
      int64_t label = labels.i()[n];
      if (!grad) {
        if (label != ignore)
          loss += std::log(sums[n]) + (*m)[n] - targets[n];
        continue;
      }
      const float *x = logits.f() + n * vocab;
      float *g = out.f() + n * vocab;
      if (label == ignore) {
        std::fill(g, g + vocab, 0.0f);
        continue;
      }
      for (int64_t j = 0; j < vocab; ++j)
        g[j] = static_cast<float>(
            (std::exp(x[j] - (*m)[n]) / sums[n] - (j + offset == label)) *
            scale);
    }
    if (!grad)
      out.f()[0] = static_cast<float>(count ? loss / count : 0.0);
    return ok();
  });
}

absl::StatusOr<Kernel> bindSoftmax(const StepSpec &s, Buf x, Buf y) {
  const Shape &sh = x.shape();
  int64_t dim = attrI(s, "dim");
  int64_t n = sh[dim], inner = product(sh, dim + 1),
          outer = product(sh, 0, dim);
  return Kernel([=] {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const float *a = x.f() + o * n * inner + in;
        float *b = y.f() + o * n * inner + in;
        double m = -kInf, sum = 0;
        for (int64_t j = 0; j < n; ++j)
          m = std::max(m, static_cast<double>(a[j * inner]));
        for (int64_t j = 0; j < n; ++j)
          sum += std::exp(a[j * inner] - m);
        for (int64_t j = 0; j < n; ++j)
          b[j * inner] = static_cast<float>(std::exp(a[j * inner] - m) / sum);
      }
    return ok();
  });
}
} // namespace

absl::StatusOr<Kernel> bindKernel(const StepSpec &s, const std::vector<Buf> &in,
                                  const std::vector<Buf> &out,
                                  const SymbolResolver &resolve,
                                  const VocabBlock &block) {
  for (const std::vector<Buf> *list : {&in, &out})
    for (const Buf &b : *list)
      if (b.spec->dtype != DType::F32 && b.spec->dtype != DType::I32)
        return absl::UnimplementedError(absl::StrCat(
            s.op, ": element type ", std::string(dtypeName(b.spec->dtype)),
            " is not supported by the CPU runtime yet (f32 only)"));
  const std::string &op = s.op;
  auto need = [&](size_t nin, size_t nout) -> absl::Status {
    if (in.size() != nin || out.size() != nout)
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": expected ", nin, " operands and ", nout, " results"));
    return absl::OkStatus();
  };
#define WEFT_NEED(a, b)                                                        \
  if (absl::Status st = need(a, b); !st.ok())                                  \
    return st;

  // Elementwise.
  using U = double (*)(double);
  static const std::pair<const char *, U> unaries[] = {
      {"weft.neg", [](double x) { return -x; }},
      {"weft.exp", [](double x) { return std::exp(x); }},
      {"weft.log", [](double x) { return std::log(x); }},
      {"weft.tanh", [](double x) { return std::tanh(x); }},
      {"weft.sqrt", [](double x) { return std::sqrt(x); }},
      {"weft.rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
      {"weft.square", [](double x) { return x * x; }},
      {"weft.gelu", gelu},
      {"weft.silu", silu},
  };
  for (auto [name, fn] : unaries)
    if (op == name) {
      WEFT_NEED(1, 1);
      return unary(in[0], out[0], fn);
    }
  using B = double (*)(double, double);
  static const std::pair<const char *, B> binaries[] = {
      {"weft.add", [](double a, double b) { return a + b; }},
      {"weft.sub", [](double a, double b) { return a - b; }},
      {"weft.mul", [](double a, double b) { return a * b; }},
      {"weft.div", [](double a, double b) { return a / b; }},
      {"weft.max",
       [](double a, double b) {
         return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
       }},
      {"weft.ge", [](double a, double b) { return a >= b ? 1.0 : 0.0; }},
      {"weft.gelu_grad", geluGrad},
      {"weft.silu_grad", siluGrad},
  };
  for (auto [name, fn] : binaries)
    if (op == name) {
      WEFT_NEED(2, 1);
      return binary(in[0], in[1], out[0], fn);
    }
  if (op == "weft.pow") {
    WEFT_NEED(1, 1);
    double e = attrF(s, "exponent");
    return unary(in[0], out[0], [e](double x) { return std::pow(x, e); });
  }
  if (op == "weft.dropout") {
    WEFT_NEED(1, 1);
    double rate = attrF(s, "rate");
    auto seed = static_cast<uint64_t>(attrI(s, "seed"));
    Buf x = in[0], y = out[0];
    return Kernel([=] {
      for (int64_t i = 0; i < y.size(); ++i)
        y.f()[i] = rate > 0 && uniform24(seed, i) < rate
                       ? 0.0f
                       : static_cast<float>(x.f()[i] / (1.0 - rate));
      return ok();
    });
  }
  if (op == "weft.cast") {
    WEFT_NEED(1, 1);
    Buf x = in[0], y = out[0];
    DType from = x.spec->dtype, to = y.spec->dtype;
    return Kernel([=] {
      for (int64_t i = 0; i < y.size(); ++i) {
        double v = from == DType::F32 ? x.f()[i] : x.i()[i];
        if (to == DType::F32)
          y.f()[i] = static_cast<float>(v);
        else
          y.i()[i] = static_cast<int32_t>(std::trunc(v));
      }
      return ok();
    });
  }

  if (op == "weft.fused") {
    auto it = s.attrs.find("kernel");
    if (it == s.attrs.end() || !it->is_string())
      return absl::InvalidArgumentError("weft.fused: no kernel name");
    std::string name = it->get<std::string>();
    auto fn =
        reinterpret_cast<FusedKernelFn>(resolve ? resolve(name) : nullptr);
    if (!fn)
      return absl::NotFoundError(absl::StrCat(
          "weft.fused: kernel '", name, "' is not in the kernel library"));
    std::vector<const float *> inputs;
    std::vector<float *> outputs;
    for (const Buf &b : in)
      inputs.push_back(b.f());
    for (const Buf &b : out)
      outputs.push_back(b.f());
    int64_t n = out.front().size();
    return Kernel([=] {
      fn(inputs.data(), outputs.data(), n);
      return ok();
    });
  }

  // Shapes.
  if (op == "weft.reshape") {
    WEFT_NEED(1, 1);
    Buf x = in[0], y = out[0];
    return Kernel([=] {
      if (x.data !=
          y.data) // Planned as a view when the operand is in the arena.
        std::memmove(y.data, x.data, y.spec->bytes());
      return ok();
    });
  }
  if (op == "weft.transpose" || op == "weft.broadcast" || op == "weft.slice") {
    WEFT_NEED(1, 1);
    Buf x = in[0], y = out[0];
    CopySource src = copySource(s, x.shape(), y.shape().size());
    // Every value here is 4 bytes wide (f32 or i32): copy as 32-bit words.
    auto source = std::make_shared<const std::vector<int64_t>>(
        gatherIndex(y.shape(), src.strides, src.base));
    return Kernel([=] {
      const uint32_t *from = reinterpret_cast<const uint32_t *>(x.data);
      uint32_t *to = reinterpret_cast<uint32_t *>(y.data);
      const int64_t *index = source->data();
      for (size_t i = 0, n = source->size(); i < n; ++i)
        to[i] = from[index[i]];
      return ok();
    });
  }
  if (op == "weft.concat") {
    int64_t dim = attrI(s, "dim");
    Buf y = out[0];
    int64_t outer = product(y.shape(), 0, dim);
    int64_t rowBytes = product(y.shape(), dim) * dtypeSize(y.spec->dtype);
    std::vector<Buf> parts = in;
    return Kernel([=] {
      int64_t offset = 0;
      for (const Buf &p : parts) {
        int64_t partBytes = product(p.shape(), dim) * dtypeSize(p.spec->dtype);
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(y.data + o * rowBytes + offset, p.data + o * partBytes,
                      partBytes);
        offset += partBytes;
      }
      return ok();
    });
  }
  if (op == "weft.reduce_sum" || op == "weft.reduce_mean" ||
      op == "weft.reduce_max") {
    WEFT_NEED(1, 1);
    return bindReduce(s, in[0], out[0],
                      op == "weft.reduce_sum"    ? 0
                      : op == "weft.reduce_mean" ? 1
                                                 : 2);
  }
  if (op == "weft.matmul") {
    WEFT_NEED(2, 1);
    return bindMatmul(s, in[0], in[1], out[0]);
  }
  if (op == "weft.matmul_epilogue")
    return bindMatmulEpilogue(s, in, out);

  // Neural-network ops.
  if (op == "weft.embedding" || op == "weft.embedding_grad") {
    WEFT_NEED(2, 1);
    bool grad = op == "weft.embedding_grad";
    Buf table = grad ? out[0] : in[0], ids = grad ? in[0] : in[1],
        rows = grad ? in[1] : out[0];
    // A vocabulary block holds rows [offset, offset + vocab) of `total`:
    // ids elsewhere read zeros (another rank adds their rows).
    int64_t vocab = table.shape()[0], dim = table.shape()[1];
    int64_t offset = block.offset, total = block.total ? block.total : vocab;
    return Kernel([=]() -> absl::Status {
      if (grad)
        std::fill(table.f(), table.f() + table.size(), 0.0f);
      for (int64_t i = 0; i < ids.size(); ++i) {
        int64_t id = ids.i()[i];
        if (id < 0 || id >= total)
          return absl::OutOfRangeError(
              absl::StrCat(op, ": token id ", id, " at position ", i,
                           " is outside [0, ", total, ")"));
        int64_t row = id - offset;
        bool mine = row >= 0 && row < vocab;
        if (grad && mine)
          for (int64_t d = 0; d < dim; ++d)
            table.f()[row * dim + d] += rows.f()[i * dim + d];
        else if (!grad && mine)
          std::memcpy(rows.f() + i * dim, table.f() + row * dim,
                      dim * sizeof(float));
        else if (!grad)
          std::fill(rows.f() + i * dim, rows.f() + (i + 1) * dim, 0.0f);
      }
      return ok();
    });
  }
  if (op == "weft.layer_norm" || op == "weft.rms_norm" ||
      op == "weft.layer_norm_grad" || op == "weft.rms_norm_grad")
    return bindNorm(s, in, out, op.find("rms") != std::string::npos,
                    op.find("grad") != std::string::npos);
  if (op == "weft.softmax") {
    WEFT_NEED(1, 1);
    return bindSoftmax(s, in[0], out[0]);
  }
  if (op == "weft.rope") {
    WEFT_NEED(1, 1);
    Buf x = in[0], y = out[0];
    const Shape sh = x.shape();
    double theta = attrF(s, "theta", 10000.0);
    double sign = attrB(s, "inverse") ? -1.0 : 1.0;
    int64_t offset = attrI(s, "position_offset");
    return Kernel([=] {
      int64_t half = sh[3] / 2;
      for (int64_t b = 0; b < sh[0]; ++b)
        for (int64_t p = 0; p < sh[1]; ++p)
          for (int64_t h = 0; h < sh[2]; ++h) {
            int64_t base = ((b * sh[1] + p) * sh[2] + h) * sh[3];
            for (int64_t i = 0; i < half; ++i) {
              double f = sign * static_cast<double>(p + offset) *
                         std::pow(theta, -2.0 * i / static_cast<double>(sh[3]));
              double x1 = x.f()[base + i], x2 = x.f()[base + i + half];
              y.f()[base + i] =
                  static_cast<float>(x1 * std::cos(f) - x2 * std::sin(f));
              y.f()[base + i + half] =
                  static_cast<float>(x2 * std::cos(f) + x1 * std::sin(f));
            }
          }
      return ok();
    });
  }
  if (op == "weft.attention") {
    WEFT_NEED(3, 2);
    return bindAttention(s, in[0], in[1], in[2], out[0], out[1]);
  }
  if (op == "weft.attention_grad") {
    WEFT_NEED(6, 3);
    return bindAttentionGrad(s, in, out);
  }
  if (op == "weft.cross_entropy") {
    WEFT_NEED(2, 1);
    return bindCrossEntropy(s, in, out[0], false, block);
  }
  if (op == "weft.cross_entropy_grad") {
    WEFT_NEED(3, 1);
    return bindCrossEntropy(s, in, out[0], true, block);
  }
  if (op == "weft.one_hot") {
    WEFT_NEED(1, 1);
    Buf ids = in[0], y = out[0];
    int64_t classes = y.shape().back();
    return Kernel([=] {
      std::fill(y.f(), y.f() + y.size(), 0.0f);
      for (int64_t i = 0; i < ids.size(); ++i)
        if (ids.i()[i] >= 0 && ids.i()[i] < classes)
          y.f()[i * classes + ids.i()[i]] = 1.0f;
      return ok();
    });
  }
  if (op == "weft.topk" || op == "weft.topk_gating") {
    WEFT_NEED(1, 2);
    Buf x = in[0], values = out[0], ids = out[1];
    int64_t k = attrI(s, "k"), n = x.shape().back(), rows = x.size() / n;
    bool gating = op == "weft.topk_gating", normalize = attrB(s, "normalize");
    return Kernel([=] {
      std::vector<double> row(n);
      for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x.f() + r * n;
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
        topkRow(row.data(), n, k, values.f() + r * k, ids.i() + r * k);
        if (gating && normalize) {
          double chosen = 0;
          for (int64_t j = 0; j < k; ++j)
            chosen += row[ids.i()[r * k + j]];
          for (int64_t j = 0; j < k; ++j)
            values.f()[r * k + j] =
                static_cast<float>(row[ids.i()[r * k + j]] / chosen);
        }
      }
      return ok();
    });
  }
  if (op == "weft.expert_dispatch" || op == "weft.expert_scatter" ||
      op == "weft.expert_combine" || op == "weft.expert_gather") {
    // Each op moves rows between token pairs (t, j) and expert slots (e, c).
    bool toSlots = op == "weft.expert_dispatch" || op == "weft.expert_scatter";
    bool combine = op == "weft.expert_combine";
    Buf src = in[0], ids = combine ? in[2] : in[1], dst = out[0];
    Buf weights = combine ? in[1] : Buf();
    const Shape &slotShape = toSlots ? dst.shape() : src.shape();
    int64_t experts = slotShape[0], capacity = slotShape[1], dim = slotShape[2];
    int64_t pairs = ids.size(), k = ids.shape()[1];
    bool perToken =
        op == "weft.expert_dispatch"; // src is [T, D], not [T, k, D].
    return Kernel([=]() -> absl::Status {
      auto slots = assignSlots(ids.i(), pairs, experts, capacity, op);
      if (!slots.ok())
        return slots.status();
      std::fill(dst.f(), dst.f() + dst.size(), 0.0f);
      for (int64_t p = 0; p < pairs; ++p) {
        if ((*slots)[p] < 0)
          continue;
        float *slot = (toSlots ? dst.f() : src.f()) +
                      (ids.i()[p] * capacity + (*slots)[p]) * dim;
        if (toSlots) {
          const float *row = src.f() + (perToken ? p / k : p) * dim;
          std::memcpy(slot, row, dim * sizeof(float));
        } else if (combine) {
          float *row = dst.f() + (p / k) * dim;
          for (int64_t d = 0; d < dim; ++d)
            row[d] += weights.f()[p] * slot[d];
        } else {
          std::memcpy(dst.f() + p * dim, slot, dim * sizeof(float));
        }
      }
      return ok();
    });
  }
#undef WEFT_NEED
  return absl::UnimplementedError(
      absl::StrCat("the CPU runtime has no kernel for '", op, "'"));
}

} // namespace weft::runtime

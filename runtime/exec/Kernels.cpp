//===- Kernels.cpp - the CPU kernels a bundle's steps call ----------------===//
//
// Each binder decodes its attributes and shapes once and returns a closure.
// Arithmetic is done in double and stored as float, which makes elementwise
// results identical to the reference evaluator's fp32 mode.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Kernels.h"

#include "runtime/exec/CpuMath.h"
#include "runtime/exec/StepAttrs.h"

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

using cpu::gatherIndex;

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

absl::StatusOr<Kernel> bindReduce(const StepSpec &s, Buf x, Buf y,
                                  cpu::ReduceKind kind) {
  auto plan = std::make_shared<const cpu::ReducePlan>(
      x.shape(), attrInts(s, "dims"), kind);
  return Kernel([=] {
    plan->run(x.f(), y.f());
    return ok();
  });
}

absl::StatusOr<Kernel> bindNorm(const StepSpec &s, const std::vector<Buf> &in,
                                const std::vector<Buf> &out, bool rms,
                                bool grad) {
  double eps = attrF(s, "epsilon", rms ? 1e-6 : 1e-5);
  Buf x = in[0], w = in[1];
  int64_t dim = x.shape().back(), rows = x.size() / dim;
  if (!grad) {
    Buf bias = rms ? Buf() : in[2], y = out[0];
    return Kernel([=] {
      cpu::normForward(x.f(), w.f(), rms ? nullptr : bias.f(), y.f(), rows, dim,
                       rms, eps);
      return ok();
    });
  }
  Buf dy = in[2], dx = out[0], dw = out[1], db = rms ? Buf() : out[2];
  return Kernel([=] {
    cpu::normBackward(x.f(), w.f(), dy.f(), dx.f(), dw.f(),
                      rms ? nullptr : db.f(), rows, dim, rms, eps);
    return ok();
  });
}

absl::StatusOr<Kernel> bindAttention(const StepSpec &st, Buf q, Buf k, Buf v,
                                     Buf out, Buf lse) {
  cpu::AttentionShape a(q.shape(), k.shape(), v.shape());
  float scale = static_cast<float>(attrF(st, "scale"));
  bool causal = attrB(st, "causal");
  return Kernel([=] {
    cpu::attentionForward(a, scale, causal, q.f(), k.f(), v.f(), out.f(),
                          lse.f());
    return ok();
  });
}

absl::StatusOr<Kernel> bindAttentionGrad(const StepSpec &st,
                                         const std::vector<Buf> &in,
                                         const std::vector<Buf> &out) {
  Buf q = in[0], k = in[1], v = in[2], o = in[3], lse = in[4], dout = in[5];
  Buf dq = out[0], dk = out[1], dv = out[2];
  cpu::AttentionShape a(q.shape(), k.shape(), v.shape());
  float scale = static_cast<float>(attrF(st, "scale"));
  bool causal = attrB(st, "causal");
  return Kernel([=] {
    cpu::attentionBackward(a, scale, causal, q.f(), k.f(), v.f(), o.f(),
                           lse.f(), dout.f(), dq.f(), dk.f(), dv.f());
    return ok();
  });
}

absl::StatusOr<Kernel> bindCrossEntropy(const StepSpec &s,
                                        const std::vector<Buf> &in, Buf out,
                                        bool grad, const VocabBlock &block) {
  Buf logits = in[0], labels = in[1];
  int64_t vocab = logits.shape().back(), rows = labels.size();
  int64_t ignore = attrI(s, "ignore_index", -100);
  Buf seed = grad ? in[2] : Buf();
  std::string op = s.op;
  auto scratch = std::make_shared<cpu::CrossEntropyScratch>();
  return Kernel([=]() -> absl::Status {
    return cpu::crossEntropy(logits.f(), labels.i(), rows, vocab, ignore,
                             grad ? seed.f() : nullptr, out.f(), block,
                             *scratch, op.c_str());
  });
}

absl::StatusOr<Kernel> bindSoftmax(const StepSpec &s, Buf x, Buf y) {
  int64_t dim = attrI(s, "dim");
  return Kernel([=] {
    cpu::softmax(x.f(), y.f(), x.shape(), dim);
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
      cpu::dropout(x.f(), y.f(), y.size(), rate, seed);
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
                      op == "weft.reduce_sum"    ? cpu::ReduceKind::Sum
                      : op == "weft.reduce_mean" ? cpu::ReduceKind::Mean
                                                 : cpu::ReduceKind::Max);
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
    int64_t vocab = table.shape()[0], dim = table.shape()[1];
    std::string what = op;
    return Kernel([=]() -> absl::Status {
      return cpu::embedding(grad, table.f(), vocab, dim, ids.i(), ids.size(),
                            rows.f(), block, what.c_str());
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
    bool inverse = attrB(s, "inverse");
    int64_t offset = attrI(s, "position_offset");
    return Kernel([=] {
      cpu::rope(x.f(), y.f(), sh, theta, offset, inverse);
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
      cpu::oneHot(ids.i(), ids.size(), classes, y.f());
      return ok();
    });
  }
  if (op == "weft.topk" || op == "weft.topk_gating") {
    WEFT_NEED(1, 2);
    Buf x = in[0], values = out[0], ids = out[1];
    int64_t k = attrI(s, "k"), n = x.shape().back(), rows = x.size() / n;
    bool gating = op == "weft.topk_gating", normalize = attrB(s, "normalize");
    return Kernel([=] {
      cpu::topk(x.f(), rows, n, k, gating, normalize, values.f(), ids.i());
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
    cpu::ExpertMove move =
        op == "weft.expert_dispatch"  ? cpu::ExpertMove::Dispatch
        : op == "weft.expert_scatter" ? cpu::ExpertMove::Scatter
        : combine                     ? cpu::ExpertMove::Combine
                                      : cpu::ExpertMove::Gather;
    std::string what = op;
    return Kernel([=]() -> absl::Status {
      return cpu::expertMove(move, src.f(), ids.i(), pairs, k,
                             combine ? weights.f() : nullptr, dst.f(),
                             dst.size(), experts, capacity, dim, what.c_str());
    });
  }
#undef WEFT_NEED
  return absl::UnimplementedError(
      absl::StrCat("the CPU runtime has no kernel for '", op, "'"));
}

} // namespace weft::runtime

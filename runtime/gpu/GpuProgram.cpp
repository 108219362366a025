//===- GpuProgram.cpp - a sched program as GPU launches -------------------===//
//
// One rule per instruction kind. The loader has checked every shape, dtype,
// arity and attribute, so what is checked here is only what the GPU's
// kernels cannot do: which element types each reads (f32, and bf16 where
// it keeps bf16 as stored), the scratch a multi-kernel instruction needs,
// and the instructions the GPU runtime has no kernel for yet.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/GpuProgram.h"

#include "dialects/sched/IR/ScratchLayout.h"
#include "runtime/exec/BundleData.h"
#include "runtime/gpu/kernels/OpsAbi.h"
#include "runtime/support/Epilogue.h"
#include "runtime/support/Fp8Scaling.h"
#include "runtime/support/GroupedRows.h"
#include "runtime/support/Shapes.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <functional>
#include <map>

namespace weft::runtime {
namespace {
using sched::Instruction;
using sched::Op;
using sched::TensorType;
using Shape = std::vector<int64_t>;
namespace layout = ::weft::sched::scratch;

constexpr unsigned kThreads = 256;
/// Grid-stride kernels stop growing the grid here (132 SMs x 16 blocks
/// keeps every multiprocessor busy).
constexpr int64_t kMaxBlocks = 132 * 16;

GpuArg scalar(GpuArg::Kind kind, int64_t i, double f) {
  GpuArg a;
  a.kind = kind;
  a.i = i;
  a.f = f;
  return a;
}
GpuArg i64(int64_t v) { return scalar(GpuArg::Kind::I64, v, 0); }
GpuArg i32(int64_t v) { return scalar(GpuArg::Kind::I32, v, 0); }
GpuArg f64(double v) { return scalar(GpuArg::Kind::F64, 0, v); }
GpuArg f32(double v) { return scalar(GpuArg::Kind::F32, 0, v); }
template <typename T> GpuArg bytesOf(const T &value) {
  GpuArg a;
  a.kind = GpuArg::Kind::Bytes;
  a.bytes.assign(reinterpret_cast<const char *>(&value), sizeof(T));
  return a;
}
GpuArg null() { return GpuArg(); }
/// `arg` (a buffer) `bytes` further in.
GpuArg at(GpuArg arg, int64_t bytes) {
  arg.buffer.offset += bytes;
  return arg;
}
/// The `size` bytes of scratch `arg` at `offset`.
GpuArg region(GpuArg arg, int64_t offset, int64_t size) {
  arg = at(arg, offset);
  arg.buffer.bytes = size;
  return arg;
}

unsigned gridFor(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks)));
}

int typeCode(DType t) {
  return t == DType::F32    ? WEFT_TYPE_F32
         : t == DType::BF16 ? WEFT_TYPE_BF16
         : t == DType::F16  ? WEFT_TYPE_F16
                            : WEFT_TYPE_I32;
}

/// The host copy of a buffer of group sizes (its slot), by the buffer
/// whose memory it is (rootBuffer).
using HostCopies = std::map<int64_t, int64_t>;

/// The buffer whose memory `buffer` is: itself, or what it is a view of.
int64_t rootBuffer(const sched::Program &program, int64_t buffer) {
  while (program.buffers[buffer].kind == sched::Buffer::Kind::View)
    buffer = program.buffers[buffer].of;
  return buffer;
}

/// The launches of one instruction.
class Translator {
public:
  Translator(const sched::Program &program, const MeshSpec &mesh, int64_t rank,
             int64_t index, GpuProgram &result, HostCopies &hostCopies)
      : program(program), ins(program.instructions[index]), mesh(mesh),
        rank(rank), index(index), out(result.launches), result(result),
        hostCopies(hostCopies) {}

  absl::Status run();

private:
  const TensorType &type(size_t i) const {
    return program.buffers[ins.operands[i]].type;
  }
  DType dtype(size_t i) const { return type(i).dtype; }
  const Shape &shape(size_t i) const { return type(i).shape; }
  int64_t count(size_t i) const { return type(i).numElements(); }
  GpuArg buf(size_t i) const {
    GpuArg a;
    a.kind = GpuArg::Kind::Buffer;
    a.buffer = {GpuBuffer::Kind::Buffer, ins.operands[i], 0};
    return a;
  }
  static GpuArg error() {
    GpuArg a;
    a.kind = GpuArg::Kind::Buffer;
    a.buffer.kind = GpuBuffer::Kind::Error;
    return a;
  }
  /// The scratch operand (the last), which `what` needs on a GPU.
  absl::StatusOr<GpuArg> scratch() const {
    if (!ins.hasScratch)
      return absl::FailedPreconditionError(
          "has no scratch, which the GPU's kernels need here and weftc "
          "compile --target cuda gives it: the bundle was not made by this "
          "weftc for cuda (recompile it)");
    return buf(ins.operands.size() - 1);
  }
  /// Operand i must be one of `types`.
  absl::Status need(size_t i, std::initializer_list<DType> types) const {
    for (DType t : types)
      if (dtype(i) == t)
        return absl::OkStatus();
    std::string want;
    for (DType t : types)
      absl::StrAppend(&want, want.empty() ? "" : " or ", sched::dtypeText(t));
    return absl::UnimplementedError(absl::StrCat(
        "operand ", i, " is ", sched::dtypeText(dtype(i)),
        "; the GPU kernel takes ", want,
        " (weftc compile --target cuda makes the copies it needs)"));
  }
  absl::Status needAll(std::initializer_list<std::pair<size_t, DType>> list) {
    for (auto [i, t] : list)
      if (absl::Status s = need(i, {t}); !s.ok())
        return s;
    return absl::OkStatus();
  }

  GpuLaunch &push(GpuLaunch::Kind kind) {
    GpuLaunch l;
    l.kind = kind;
    l.instruction = index;
    l.stream = ins.stream;
    out.push_back(std::move(l));
    return out.back();
  }
  GpuLaunch &kernel(const std::string &name, unsigned grid,
                    std::vector<GpuArg> args, unsigned block = kThreads) {
    GpuLaunch &l = push(GpuLaunch::Kind::Kernel);
    l.kernel = name;
    l.grid[0] = std::max(grid, 1u);
    l.block = block;
    l.args = std::move(args);
    return l;
  }
  void gemm(const GemmShape &g, GpuArg a, GpuArg b, GpuArg c,
            GpuArg bias = GpuArg(), GpuArg aux = GpuArg(),
            GpuArg scaleA = GpuArg(), GpuArg scaleB = GpuArg()) {
    GpuLaunch &l = push(GpuLaunch::Kind::Gemm);
    l.gemm = g;
    l.args = {a, b, c, bias, aux, scaleA, scaleB};
  }
  void zero(GpuArg target, int64_t bytes) {
    GpuLaunch &l = push(GpuLaunch::Kind::Zero);
    l.args = {target};
    l.bytes = bytes;
  }
  void memcpy(GpuArg to, GpuArg from, int64_t bytes) {
    GpuLaunch &l = push(GpuLaunch::Kind::Copy);
    l.args = {to, from};
    l.bytes = bytes;
  }
  void collective(GpuCollective what, const std::vector<std::string> &axes,
                  GpuArg in, GpuArg outArg, int64_t n) {
    GpuLaunch &l = push(GpuLaunch::Kind::Collective);
    l.collective = what;
    l.axes = axes;
    l.count = n;
    l.args = {in, outArg};
  }
  void scale(GpuArg data, int64_t n, double factor) {
    kernel("weft_scale_copy", gridFor(n), {data, data, i64(n), f32(factor)});
  }

  /// A vocabulary block of `local` rows along `axes`: its first row and
  /// the whole vocabulary's size.
  std::pair<int64_t, int64_t> vocab(const std::vector<std::string> &axes,
                                    int64_t local) const {
    if (axes.empty())
      return {0, local};
    return {local * mesh.groupRank(rank, axes), local * mesh.groupSize(axes)};
  }

  absl::Status launch();
  absl::Status gemmInstruction();
  absl::Status flashAttention(bool grad);
  absl::Status gemmAttention(bool grad);
  /// Attention dropout's kernel arguments (WEFT_ATTN_DROP_PARAMS in the
  /// kernels): rate 0 and nulls without dropout.
  std::vector<GpuArg> attentionDropout(bool grad);
  absl::Status crossEntropy(bool grad);
  absl::Status reduce();
  absl::Status normGrad(bool rms);
  absl::Status expert();
  absl::Status expertRoute();
  absl::Status raggedAllToAll();
  absl::Status groupedMatmul(bool wgrad);
  /// weft_fp8_block_gemm for this gemm or grouped_matmul: FP8 codes A [m,
  /// k] and B [n, k] (grouped: `groups` of the rows of A and C by B's
  /// `experts` matrices), each with its scales in its mode.
  absl::Status fp8BlockGemm(GpuArg sizes, int64_t groups, int64_t experts,
                            int64_t m, int64_t n, int64_t k, int64_t lda,
                            int64_t ldb, int64_t ldc, bool accumulate,
                            int modeA, int modeB);
  absl::Status copy();
  absl::Status fill();
  absl::Status collectiveInstruction();

  const sched::Program &program;
  const Instruction &ins;
  const MeshSpec &mesh;
  int64_t rank, index;
  std::vector<GpuLaunch> &out;
  GpuProgram &result;
  HostCopies &hostCopies;
};

absl::Status Translator::launch() {
  const auto &a = ins.as<sched::LaunchAttrs>();
  // Generated kernels read and write f32 and bf16 as stored
  // (codegen/CudaSource.cpp), under the name <kernel>_cuda.
  std::vector<GpuArg> args;
  for (size_t i = 0; i < ins.operands.size(); ++i) {
    if (absl::Status s = need(i, {DType::F32, DType::BF16}); !s.ok())
      return s;
    args.push_back(buf(i));
  }
  for (const sched::Scalar &s : a.scalars)
    switch (s.type) {
    case sched::ScalarType::I64:
      args.push_back(i64(s.i));
      break;
    case sched::ScalarType::I32:
      args.push_back(i32(s.i));
      break;
    case sched::ScalarType::F32:
      args.push_back(f32(s.f));
      break;
    case sched::ScalarType::F64:
      args.push_back(f64(s.f));
      break;
    }
  GpuLaunch &l =
      kernel(a.kernel + "_cuda", 1, std::move(args),
             static_cast<unsigned>(std::clamp<int64_t>(a.block, 1, 1024)));
  for (int d = 0; d < 3; ++d)
    l.grid[d] = static_cast<unsigned>(std::clamp<int64_t>(
        a.grid[d], 1, d == 0 ? int64_t(0x7fffffff) : int64_t(65535)));
  return absl::OkStatus();
}

absl::Status Translator::gemmInstruction() {
  const auto &a = ins.as<sched::GemmAttrs>();
  if (a.hasScales) {
    // cuBLASLt's FP8 GEMM: both operands k-contiguous (the compiler casts
    // them so, sched.fp8_cast's transpose), C f32 or bf16.
    if (a.transposeA || !a.transposeB)
      return absl::UnimplementedError(
          "an FP8 GEMM on the GPU reads A [m, k] and B [n, k] (cuBLASLt's "
          "TN layout); this one transposes A or not B");
    if (dtype(0) == DType::F8E5M2 && dtype(1) == DType::F8E5M2)
      return absl::UnimplementedError(
          "cuBLASLt multiplies no f8e5m2 by f8e5m2 (E4M3 x E5M2 only)");
    // cuBLASLt's FP8 epilogues have type rules of their own (bias types,
    // the GELU aux) that no GPU has checked here; the compiler emits none.
    if (a.epilogue != sched::Epilogue::None)
      return absl::UnimplementedError(
          "an FP8 GEMM with an epilogue is not in the GPU runtime yet");
    if (absl::Status s = need(2, {DType::F32, DType::BF16}); !s.ok())
      return s;
  } else {
    if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
      return s;
    if (dtype(1) != dtype(0) ||
        (dtype(2) != dtype(0) && dtype(2) != DType::F32))
      return absl::UnimplementedError(
          "GPU GEMMs take A and B of one type and C of it or f32");
  }
  GemmShape g;
  g.transA = a.transposeA;
  g.transB = a.transposeB;
  g.m = a.mnk[0], g.n = a.mnk[1], g.k = a.mnk[2];
  g.batch = a.batch;
  g.lda = a.ld[0], g.ldb = a.ld[1], g.ldc = a.ld[2];
  g.strideA = a.strides[0], g.strideB = a.strides[1], g.strideC = a.strides[2];
  if (a.hasScales) {
    g.fp8A = dtype(0), g.fp8B = dtype(1);
    g.scaleModeA = a.scaleModeA, g.scaleModeB = a.scaleModeB;
    g.type = dtype(2);
  } else {
    g.type = dtype(0);
    g.f32Out = dtype(2) == DType::F32 && g.type != DType::F32;
  }
  g.epilogue = epilogueOf(a.epilogue);
  g.beta = a.accumulate ? 1.0f : 0.0f;
  if (a.hasScales && g.scaleModeA == WEFT_FP8_SCALE_VEC32) {
    // MXFP8's 1 x 32 blocks: Weft's own kernel (no cuBLASLt mode before
    // Blackwell); the loader checked A [m, k], B [n, k], one matrix, k % 32
    // == 0; FP8 GEMMs take no epilogue (above), so the scales are operands
    // 3 and 4.
    return fp8BlockGemm(null(), 1, 1, g.m, g.n, g.k, g.rowA(), g.rowB(),
                        g.rowC(), a.accumulate, g.scaleModeA, g.scaleModeB);
  }
  size_t next = 3;
  // cuBLASLt reads the bias and the aux matrix in C's type.
  for (size_t i = 3; i < 3 + a.hasBias + a.hasAux; ++i)
    if (absl::Status s = need(i, {dtype(2)}); !s.ok())
      return s;
  GpuArg bias = a.hasBias ? buf(next++) : null();
  GpuArg aux = a.hasAux ? buf(next++) : null();
  // cuBLASLt lays the aux matrix out as C (its leading dimension and batch
  // stride), where the instruction's aux is packed [batch, m, n]: C must be
  // packed too, with a leading dimension cuBLASLt takes (a multiple of 8).
  if (a.hasAux) {
    if (g.rowC() != g.n || (g.batch > 1 && g.strideC != g.m * g.n))
      return absl::UnimplementedError(
          "a GELU epilogue on the GPU needs C packed like its aux matrix "
          "(leading dimension n, batch stride m n)");
    if (g.rowC() % 8 != 0)
      return absl::UnimplementedError(absl::StrCat(
          "a GELU epilogue on the GPU needs a row width divisible by 8, got ",
          g.rowC()));
  }
  gemm(g, buf(0), buf(1), buf(2), bias, aux, a.hasScales ? buf(next) : null(),
       a.hasScales ? buf(next + 1) : null());
  return absl::OkStatus();
}

std::vector<GpuArg> Translator::attentionDropout(bool grad) {
  const auto &a = ins.as<sched::AttentionAttrs>();
  sched::AttentionAttrs::Optional at = a.optionalOperands(grad);
  const Shape &q = shape(0), &k = shape(1);
  // The loader checked the split (batch and heads), so the block exists.
  MaskBlock b = a.dropout > 0
                    ? *attentionMaskBlock(mesh, rank, q[0], q[2], q[1], k[1],
                                          a.block.split, a.block.microbatches)
                    : MaskBlock();
  return {f64(a.dropout),
          i64(a.seed),
          at.step >= 0 ? buf(at.step) : null(),
          at.microbatch >= 0 ? buf(at.microbatch) : null(),
          i64(a.block.microbatches),
          i64(b.microbatchStep),
          i64(b.start[0]),
          i64(b.start[1]),
          i64(b.global[1]),
          i64(b.global[2])};
}

absl::Status Translator::flashAttention(bool grad) {
  const Shape &q = shape(0), &k = shape(1), &v = shape(2);
  int64_t batch = q[0], S = q[1], hq = q[2], d = q[3], T = k[1], hkv = k[2],
          dv = v[3];
  const auto &a = ins.as<sched::AttentionAttrs>();
  std::string suffix = dtype(0) == DType::BF16 ? "_bf16" : "";
  sched::AttentionAttrs::Optional at = a.optionalOperands(grad);
  GpuArg qpos = null(), kpos = null(), lseGrad = null();
  if (a.hasPositions) {
    qpos = buf(at.queryPositions);
    kpos = buf(at.keyPositions);
  }
  if (a.hasLseGrad)
    lseGrad = buf(at.lseGrad);
  std::vector<GpuArg> sizes = {i32(batch),    i32(S), i32(T),  i32(hq),
                               i32(hkv),      i32(d), i32(dv), f32(a.scale),
                               i32(a.causal), qpos,   kpos};
  std::vector<GpuArg> dropout = attentionDropout(grad);
  // The sizes, then (after dq's lse gradient) dropout's arguments.
  auto with = [&](std::vector<GpuArg> args, bool lseGradToo = false) {
    args.insert(args.end(), sizes.begin(), sizes.end());
    if (lseGradToo)
      args.push_back(lseGrad);
    args.insert(args.end(), dropout.begin(), dropout.end());
    return args;
  };
  auto tiled = [&](GpuLaunch &l, int64_t heads) {
    l.grid[1] = static_cast<unsigned>(heads);
    l.grid[2] = static_cast<unsigned>(batch);
  };
  unsigned queryTiles = static_cast<unsigned>((S + 63) / 64);
  if (!grad) {
    GpuArg entropy = a.hasEntropy ? buf(at.entropy) : null();
    tiled(kernel("weft_attention_forward" + suffix, queryTiles,
                 with({buf(0), buf(1), buf(2), buf(3), buf(4), entropy}), 64),
          hq);
    return absl::OkStatus();
  }
  // q, k, v, out, lse, dout, dq, dk, dv, scratch (delta at 0).
  absl::StatusOr<GpuArg> space = scratch();
  if (!space.ok())
    return space.status();
  GpuArg delta = region(*space, 0, batch * hq * S * 4);
  tiled(kernel("weft_attention_backward_dq" + suffix, queryTiles,
               with({buf(0), buf(1), buf(2), buf(3), buf(4), buf(5), buf(6),
                     delta},
                    /*lseGradToo=*/true),
               64),
        hq);
  tiled(kernel("weft_attention_backward_dkv" + suffix,
               static_cast<unsigned>((T + 31) / 32),
               with({buf(0), buf(1), buf(2), buf(4), delta, buf(5), buf(7),
                     buf(8)}),
               32),
        hkv);
  return absl::OkStatus();
}

absl::Status Translator::gemmAttention(bool grad) {
  const Shape &qs = shape(0), &ks = shape(1), &vs = shape(2);
  int64_t B = qs[0], S = qs[1], hq = qs[2], d = qs[3], T = ks[1], hkv = ks[2],
          dv = vs[3], g = hq / hkv;
  DType type = dtype(0);
  int64_t es = static_cast<int64_t>(dtypeSize(type)), plane = S * T;
  const auto &a = ins.as<sched::AttentionAttrs>();
  float scale = static_cast<float>(a.scale);
  absl::StatusOr<GpuArg> space = scratch();
  if (!space.ok())
    return space.status();
  // The loader checked the scratch holds the layout.
  std::optional<layout::AttentionLayout> l =
      layout::attentionLayout(true, grad, B, S, hq, T, es);
  // scores [B, Hq, S, T] f32 (later dP), probs of q's type (later dS).
  int64_t planes = B * hq * plane;
  GpuArg scores = region(*space, 0, planes * 4),
         probs = region(*space, l->probsOffset, planes * es),
         delta = region(*space, l->deltaOffset, B * hq * S * 4);
  // Three GEMM forms cover the six products. Query head h = j g + i reads
  // kv head j; for each batch b and i, one GEMM batched over j: a kv
  // group's query heads are g rows apart in a [B, S, Hq, D] tensor, kv heads
  // one row apart in [B, T, Hkv, D], and planes g planes apart.
  // `rows` is a [B, S, Hq, rd] tensor, `keys` a [B, T, Hkv, kd] one.
  auto base = [&](int64_t m, int64_t n, int64_t kk) {
    GemmShape gs;
    gs.m = m, gs.n = n, gs.k = kk, gs.batch = hkv, gs.type = type;
    return gs;
  };
  auto rowAt = [&](int64_t b, int64_t i, int64_t dim) {
    return (b * S * hq * dim + i * dim) * es;
  };
  auto keyAt = [&](int64_t b, int64_t dim) { return b * T * hkv * dim * es; };
  auto planeAt = [&](int64_t b, int64_t i, int64_t width) {
    return (b * hq + i) * plane * width;
  };
  auto each = [&](const std::function<void(int64_t, int64_t)> &body) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < g; ++i)
        body(b, i);
  };
  // plane (f32) = alpha rows keys^T: scores, and dP = dO V^T.
  auto planeOf = [&](GpuArg rows, GpuArg keys, int64_t dim, float alpha) {
    each([&](int64_t b, int64_t i) {
      GemmShape gs = base(S, T, dim);
      gs.transB = true, gs.alpha = alpha, gs.f32Out = true;
      gs.lda = hq * dim, gs.strideA = g * dim;
      gs.ldb = hkv * dim, gs.strideB = dim;
      gs.strideC = g * plane;
      gemm(gs, at(rows, rowAt(b, i, dim)), at(keys, keyAt(b, dim)),
           at(scores, planeAt(b, i, 4)));
    });
  };
  // out rows = plane keys: O = P V, and dQ = dS K.
  auto rowsOf = [&](GpuArg keys, int64_t dim, GpuArg outRows) {
    each([&](int64_t b, int64_t i) {
      GemmShape gs = base(S, dim, T);
      gs.strideA = g * plane;
      gs.ldb = hkv * dim, gs.strideB = dim;
      gs.ldc = hq * dim, gs.strideC = g * dim;
      gemm(gs, at(probs, planeAt(b, i, es)), at(keys, keyAt(b, dim)),
           at(outRows, rowAt(b, i, dim)));
    });
  };
  // out keys = sum over the group of plane^T rows: dV = P^T dO, dK = dS^T Q.
  auto keysOf = [&](GpuArg rows, int64_t dim, GpuArg outKeys) {
    each([&](int64_t b, int64_t i) {
      GemmShape gs = base(T, dim, S);
      gs.transA = true, gs.lda = T, gs.strideA = g * plane;
      gs.ldb = hq * dim, gs.strideB = g * dim;
      gs.ldc = hkv * dim, gs.strideC = dim, gs.beta = i > 0 ? 1.0f : 0.0f;
      gemm(gs, at(probs, planeAt(b, i, es)), at(rows, rowAt(b, i, dim)),
           at(outKeys, keyAt(b, dim)));
    });
  };
  std::vector<GpuArg> dropout = attentionDropout(grad);
  bool drops = a.dropout > 0;
  // P (dropped: what weighs the values) from the scores.
  auto softmax = [&](GpuArg lseIn, GpuArg lseOut, GpuArg entropy,
                     bool dropped) {
    std::vector<GpuArg> args = {
        scores, probs,  i32(typeCode(type)), lseIn,   lseOut,      entropy,
        i64(S), i64(T), i32(a.causal),       i64(hq), i32(dropped)};
    args.insert(args.end(), dropout.begin(), dropout.end());
    kernel("weft_attention_probs", static_cast<unsigned>(B * hq * S),
           std::move(args));
  };
  planeOf(buf(0), buf(1), d, scale);
  if (!grad) { // q, k, v, out, lse, scratch.
    sched::AttentionAttrs::Optional optional = a.optionalOperands(false);
    softmax(null(), buf(4), a.hasEntropy ? buf(optional.entropy) : null(),
            drops);
    rowsOf(buf(2), dv, buf(3));
    return absl::OkStatus();
  }
  // q, k, v, out, lse, dout, dq, dk, dv, scratch. P again, from the saved
  // lse: dropped for dV, then (with dropout) undropped for dS.
  softmax(buf(4), null(), null(), drops);
  keysOf(buf(5), dv, buf(8));
  if (drops)
    softmax(buf(4), null(), null(), false);
  planeOf(buf(5), buf(2), dv, 1.0f);
  kernel("weft_attention_delta", gridFor(B * hq * S),
         {buf(5), buf(3), i32(typeCode(type)), delta, i64(B), i64(S), i64(hq),
          i64(dv)});
  std::vector<GpuArg> dscores = {
      probs,      i32(typeCode(type)), scores, delta,
      f32(scale), i64(B * hq * plane), i64(S), i64(T),
      i64(hq)};
  dscores.insert(dscores.end(), dropout.begin(), dropout.end());
  kernel("weft_attention_dscores", gridFor(B * hq * plane), std::move(dscores));
  rowsOf(buf(1), d, buf(6));
  keysOf(buf(0), d, buf(7));
  return absl::OkStatus();
}

absl::Status Translator::crossEntropy(bool grad) {
  // cross_entropy: logits, labels, loss; _grad: logits, labels, dloss,
  // dlogits. bf16 logits (and their gradient) are read and written as
  // stored, f32 otherwise.
  const auto &a = ins.as<sched::CrossEntropyAttrs>();
  if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
    return s;
  bool bf16 = dtype(0) == DType::BF16;
  if (absl::Status s =
          grad ? needAll({{1, DType::I32}, {2, DType::F32}, {3, dtype(0)}})
               : needAll({{1, DType::I32}, {2, DType::F32}});
      !s.ok())
    return s;
  absl::StatusOr<GpuArg> space = scratch();
  if (!space.ok())
    return space.status();
  int64_t vocabSize = shape(0).back(), rows = count(1);
  std::pair<int64_t, int64_t> block = vocab(a.vocabAxes, vocabSize);
  int64_t offset = block.first, total = block.second;
  std::optional<layout::CrossEntropyLayout> l =
      layout::crossEntropyLayout(rows);
  // stats = [row max; sum of exponentials; target logit] (see ops.cu).
  GpuArg stats = region(*space, 0, rows * 12),
         counted = region(*space, l->totalOffset, 8);
  auto rowsKernel = [&](int mode) {
    if (rows == 0) // It indexes rows by block; every rank skips it alike.
      return;
    kernel("weft_cross_entropy_rows", static_cast<unsigned>(rows),
           {buf(0), i32(bf16), buf(1), stats, i64(rows), i64(vocabSize),
            i64(offset), i64(total), i64(a.ignoreIndex), i32(mode), error(),
            i32(index)});
  };
  if (a.vocabAxes.empty() || mesh.groupSize(a.vocabAxes) == 1 || rows == 0) {
    rowsKernel(2);
  } else { // Megatron's vocabulary-parallel cross-entropy.
    rowsKernel(0);
    collective(GpuCollective::AllReduceMax, a.vocabAxes, stats, stats, rows);
    rowsKernel(1);
    GpuArg sums = region(*space, rows * 4, rows * 8);
    collective(GpuCollective::AllReduce, a.vocabAxes, sums, sums, 2 * rows);
  }
  kernel("weft_cross_entropy_total", 1,
         {stats, buf(1), grad ? null() : buf(2), counted, i64(rows),
          i64(a.ignoreIndex)});
  if (grad)
    kernel("weft_cross_entropy_grad", gridFor(rows * vocabSize),
           {buf(0), i32(bf16), buf(1), stats, buf(2), counted, buf(3),
            i64(rows), i64(vocabSize), i64(offset), i64(a.ignoreIndex)});
  return absl::OkStatus();
}

absl::Status Translator::reduce() {
  const auto &a = ins.as<sched::ReduceAttrs>();
  // A bf16 input is read as stored; the result is f32.
  if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
    return s;
  if (absl::Status s = need(1, {DType::F32}); !s.ok())
    return s;
  absl::StatusOr<GpuArg> partials = scratch();
  if (!partials.ok())
    return partials.status();
  const Shape &in = shape(0);
  Shape strides = rowMajorStrides(in);
  if (in.size() > WEFT_MAX_RANK)
    return absl::UnimplementedError(
        absl::StrCat("a reduction of rank over ", WEFT_MAX_RANK));
  WeftReduceIndex ix;
  std::memset(&ix, 0, sizeof(ix));
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::find(a.dims.begin(), a.dims.end(),
                             static_cast<int64_t>(d)) != a.dims.end();
    long &r = reduced ? ix.reducedRank : ix.keptRank;
    (reduced ? ix.reducedDims : ix.keptDims)[r] = in[d];
    (reduced ? ix.reducedStrides : ix.keptStrides)[r] = strides[d];
    ++r;
  }
  int64_t outputs = count(1), n = count(0);
  int64_t reduced = outputs ? n / outputs : 0;
  std::optional<layout::ReduceLayout> l =
      layout::reduceLayout(outputs, reduced);
  int kind = a.reduction == sched::Reduction::Sum    ? 0
             : a.reduction == sched::Reduction::Mean ? 1
                                                     : 2;
  GpuLaunch &partial = kernel(
      "weft_reduce_partial", static_cast<unsigned>(l->columns),
      {buf(0), i32(dtype(0) == DType::BF16), *partials, i64(outputs),
       i64(reduced), i64(l->chunk), i32(l->width), bytesOf(ix), i32(kind)});
  partial.grid[1] = static_cast<unsigned>(l->chunks);
  kernel("weft_reduce_finish", gridFor(outputs),
         {*partials, buf(1), i64(outputs), i64(l->chunks), i64(reduced),
          i32(kind)});
  return absl::OkStatus();
}

absl::Status Translator::normGrad(bool rms) {
  // input, weight, dout, dinput, dweight, [dbias], scratch: all f32, or
  // all bf16 (a bf16 model's), read and written as stored.
  size_t values = rms ? 5 : 6;
  DType t = dtype(0);
  if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
    return s;
  for (size_t i = 1; i < values; ++i)
    if (absl::Status s = need(i, {t}); !s.ok())
      return s;
  bool bf16 = t == DType::BF16;
  absl::StatusOr<GpuArg> space = scratch();
  if (!space.ok())
    return space.status();
  int64_t dim = shape(0).back(), rows = dim ? count(0) / dim : 0;
  if (rows == 0) { // Row kernels index by block: none to run. Sums of none.
    for (size_t i = 4; i < values; ++i)
      zero(buf(i), count(i) * static_cast<int64_t>(dtypeSize(t)));
    return absl::OkStatus();
  }
  std::optional<layout::NormGradLayout> l = layout::normGradLayout(rows, dim);
  GpuArg stats = region(*space, 0, rows * 16),
         partials =
             region(*space, l->partialsOffset, l->bytes - l->partialsOffset);
  double epsilon = ins.as<sched::NormGradAttrs>().epsilon;
  kernel("weft_norm_grad_rows", static_cast<unsigned>(rows),
         {buf(0), buf(1), buf(2), buf(3), stats, i64(dim), i32(rms),
          f64(epsilon), i32(bf16)});
  // The weight and bias gradients: column sums over rows, in ops.cu's two
  // passes (32 columns by a chunk of rows a block).
  GpuLaunch &sums =
      kernel("weft_norm_grad_params", static_cast<unsigned>(l->columns),
             {buf(0), buf(2), stats, partials, i64(rows), i64(dim),
              i64(l->chunk), i32(bf16)});
  sums.grid[1] = static_cast<unsigned>(l->chunks);
  kernel("weft_norm_grad_finish", gridFor(dim),
         {partials, buf(4), rms ? null() : buf(5), i64(dim), i64(l->chunks),
          i32(bf16)});
  return absl::OkStatus();
}

absl::Status Translator::expert() {
  // dispatch/scatter: source, positions, rows; combine: rows, weights,
  // positions, out; gather: rows, positions, pairs.
  bool combine = ins.op == Op::ExpertCombine;
  bool toRows = ins.op == Op::ExpertDispatch || ins.op == Op::ExpertScatter;
  size_t posAt = combine ? 2 : 1, outAt = combine ? 3 : 2;
  if (absl::Status s =
          needAll({{0, DType::F32}, {posAt, DType::I32}, {outAt, DType::F32}});
      !s.ok())
    return s;
  if (combine)
    if (absl::Status s = need(1, {DType::F32}); !s.ok())
      return s;
  const Shape &rows = shape(toRows ? outAt : 0);
  int64_t pairs = count(posAt), k = shape(posAt)[1];
  zero(buf(outAt), count(outAt) * 4);
  int mode = ins.op == Op::ExpertDispatch  ? 0
             : ins.op == Op::ExpertScatter ? 1
             : ins.op == Op::ExpertGather  ? 2
                                           : 3;
  kernel("weft_expert_move", gridFor((combine ? pairs / k : pairs) * rows[1]),
         {buf(0), buf(posAt), combine ? buf(1) : null(), buf(outAt), i64(pairs),
          i64(k), i64(rows[0]), i64(rows[1]), i32(mode), error(), i32(index)});
  return absl::OkStatus();
}

absl::Status Translator::expertRoute() {
  const auto &a = ins.as<sched::ExpertRouteAttrs>();
  if (absl::Status s =
          needAll({{0, DType::I32}, {1, DType::I32}, {2, DType::I32}});
      !s.ok())
    return s;
  int64_t tokens = shape(0)[0], k = shape(0)[1], experts = count(2);
  int64_t group = a.tokenAxes.empty() ? 1 : mesh.groupSize(a.tokenAxes);
  GpuArg all = null(), seen = null(), mine = null();
  if (group > 1) {
    // Over a group: this rank's counts per (choice, expert), all-gathered
    // on this stream (as the CPU does), rank the group's order.
    absl::StatusOr<GpuArg> space = scratch();
    if (!space.ok())
      return space.status();
    std::optional<layout::ExpertRouteLayout> l =
        layout::expertRouteLayout(k, experts, group);
    if (!l)
      return absl::InvalidArgumentError("the route's scratch overflows");
    mine = region(*space, 0, k * experts * 4);
    all = region(*space, l->allOffset, group * k * experts * 4);
    seen = region(*space, l->seenOffset, experts * 4);
    kernel("weft_expert_route_count", gridFor(1),
           {buf(0), mine, i64(tokens), i64(k), i64(experts)});
    collective(GpuCollective::AllGather, a.tokenAxes, mine, all, k * experts);
  }
  kernel("weft_expert_route_rank", gridFor(1),
         {buf(0), buf(1), buf(2), i64(tokens), i64(k), i64(experts),
          i64(a.capacity), error(), i32(index), all, i64(group),
          i64(group > 1 ? mesh.groupRank(rank, a.tokenAxes) : 0), seen, mine});
  kernel("weft_expert_route_rows", gridFor(tokens * k),
         {buf(0), buf(1), buf(2), i64(tokens * k)});
  return absl::OkStatus();
}

/// Expert parallelism's exchange with its sizes on the device: each
/// member's rows packed into a block padded to the input's N rows, one
/// fixed all-to-all of the blocks, and the received rows unpacked in
/// member order, all queued without a host sync (CUDA graphs keep it). It
/// moves G x N rows whatever the routing, the static buffers' worst case.
absl::Status Translator::raggedAllToAll() {
  if (absl::Status s = needAll(
          {{0, DType::F32}, {1, DType::I32}, {2, DType::I32}, {3, DType::F32}});
      !s.ok())
    return s;
  const auto &a = ins.as<sched::RaggedAttrs>();
  int64_t group = mesh.groupSize(a.axes), rows = shape(0)[0], dim = shape(0)[1],
          outRows = shape(3)[0];
  int64_t sendPer = count(1) / group, recvPer = count(2) / group;
  if (rows * dim == 0) { // Nothing to move: the output is zeros.
    zero(buf(3), count(3) * 4);
    return absl::OkStatus();
  }
  absl::StatusOr<GpuArg> space = scratch();
  if (!space.ok())
    return space.status();
  std::optional<layout::RaggedLayout> l =
      layout::raggedLayout(group, rows, dim);
  if (!l)
    return absl::InvalidArgumentError("the exchange's scratch overflows");
  if (group == 1) { // Its own rows, unpacked as the one block received.
    GpuArg first = region(*space, 0, 16);
    kernel("weft_ragged_self", gridFor(1),
           {buf(1), buf(2), i64(count(1)), i64(count(2)), i64(rows), error(),
            i32(index)});
    kernel("weft_ragged_offsets", gridFor(1),
           {buf(2), i64(1), i64(recvPer), i64(rows), i64(outRows), first,
            error(), i32(index)});
    kernel("weft_ragged_unpack", gridFor(outRows * dim),
           {buf(0), first, buf(3), i64(1), i64(rows), i64(outRows), i64(dim)});
    return absl::OkStatus();
  }
  int64_t block = group * rows * dim;
  GpuArg sent = region(*space, 0, block * 4),
         received = region(*space, l->recvOffset, block * 4),
         sentFirst = region(*space, l->offsetsOffset, (group + 1) * 8),
         receivedFirst = region(*space, l->offsetsOffset + (group + 1) * 8,
                                (group + 1) * 8);
  kernel("weft_ragged_offsets", gridFor(1),
         {buf(1), i64(group), i64(sendPer), i64(rows), i64(rows), sentFirst,
          error(), i32(index)});
  kernel("weft_ragged_offsets", gridFor(1),
         {buf(2), i64(group), i64(recvPer), i64(rows), i64(outRows),
          receivedFirst, error(), i32(index)});
  kernel("weft_ragged_pack", gridFor(block),
         {buf(0), sentFirst, sent, i64(group), i64(rows), i64(dim)});
  collective(GpuCollective::AllToAll, a.axes, sent, received, rows * dim);
  kernel("weft_ragged_unpack", gridFor(outRows * dim),
         {received, receivedFirst, buf(3), i64(group), i64(rows), i64(outRows),
          i64(dim)});
  return absl::OkStatus();
}

absl::Status Translator::fp8BlockGemm(GpuArg sizes, int64_t groups,
                                      int64_t experts, int64_t m, int64_t n,
                                      int64_t k, int64_t lda, int64_t ldb,
                                      int64_t ldc, bool accumulate, int modeA,
                                      int modeB) {
  // A, B, C, scale_a, scale_b are operands 0, 1, 2, 3, 4 of a gemm, and 0,
  // 1, 3, 4, 5 of a grouped_matmul (its sizes are 2).
  bool grouped = ins.op == Op::GroupedMatmul;
  size_t c = grouped ? 3 : 2, scales = grouped ? 4 : 3;
  // One block per 64 x 64 of C; grouped, the y tiles cover each group's
  // and the rest's rows (weft_fp8_block_gemm).
  int64_t tilesDown = (m + WEFT_FP8_GEMM_TILE - 1) / WEFT_FP8_GEMM_TILE +
                      (grouped ? groups : 0);
  if (n == 0 || tilesDown == 0)
    return absl::OkStatus(); // No element of C.
  if (tilesDown > 65535)
    return absl::UnimplementedError(absl::StrCat(
        "an FP8 GEMM of ", m, " rows in ", groups,
        " groups (more than 65535 tiles of ", WEFT_FP8_GEMM_TILE, ")"));
  GpuLaunch &l = kernel("weft_fp8_block_gemm", 1,
                        {buf(0),
                         buf(1),
                         buf(scales),
                         buf(scales + 1),
                         buf(c),
                         sizes,
                         i64(groups),
                         i64(experts),
                         i64(m),
                         i64(n),
                         i64(k),
                         i64(lda),
                         i64(ldb),
                         i64(ldc),
                         i32(modeA),
                         i32(modeB),
                         i32(dtype(0) == DType::F8E4M3FN),
                         i32(dtype(1) == DType::F8E4M3FN),
                         i32(dtype(c) == DType::BF16),
                         i32(accumulate)},
                        WEFT_FP8_GEMM_THREADS);
  l.grid[0] =
      static_cast<unsigned>((n + WEFT_FP8_GEMM_TILE - 1) / WEFT_FP8_GEMM_TILE);
  l.grid[1] = static_cast<unsigned>(tilesDown);
  return absl::OkStatus();
}

absl::Status Translator::groupedMatmul(bool wgrad) {
  // A grouped GEMM or weight gradient on FP8 codes: operands 0 and 1 FP8,
  // the sizes i32, out f32 or bf16, the scales (4, 5) f32.
  auto needFp8Grouped = [&]() -> absl::Status {
    for (size_t i : {0, 1})
      if (absl::Status s = need(i, {DType::F8E4M3FN, DType::F8E5M2}); !s.ok())
        return s;
    if (absl::Status s =
            needAll({{2, DType::I32}, {4, DType::F32}, {5, DType::F32}});
        !s.ok())
      return s;
    return need(3, {DType::F32, DType::BF16});
  };
  if (wgrad && ins.as<sched::GroupedWgradAttrs>().hasScales) {
    // FP8 codes [P, N] and [Q, N], expert-major (fp8_group_cast's): Weft's
    // kernel, a block per 64 x 64 of an expert's gradient, the sizes read
    // on the device. The loader checked the shapes and scales.
    if (absl::Status s = needFp8Grouped(); !s.ok())
      return s;
    int64_t p = shape(0)[0], q = shape(1)[0], n = shape(0)[1],
            experts = shape(3)[0];
    if (p == 0 || q == 0 || experts == 0)
      return absl::OkStatus();
    GpuLaunch &l =
        kernel("weft_fp8_group_wgrad", 1,
               {buf(0), buf(1), buf(4), buf(5), buf(3), buf(2), i64(count(2)),
                i64(experts), i64(p), i64(q), i64(n),
                i64(ins.as<sched::GroupedWgradAttrs>().tileRows),
                i32(dtype(0) == DType::F8E4M3FN),
                i32(dtype(1) == DType::F8E4M3FN), i32(dtype(3) == DType::BF16)},
               WEFT_FP8_GEMM_THREADS);
    l.grid[0] = static_cast<unsigned>((q + WEFT_FP8_GEMM_TILE - 1) /
                                      WEFT_FP8_GEMM_TILE);
    l.grid[1] = static_cast<unsigned>((p + WEFT_FP8_GEMM_TILE - 1) /
                                      WEFT_FP8_GEMM_TILE);
    l.grid[2] = static_cast<unsigned>(experts);
    return absl::OkStatus();
  }
  if (!wgrad && ins.as<sched::GroupedMatmulAttrs>().hasScales) {
    // FP8 codes (an expert layer's FP8 GEMMs): Weft's kernel, which reads
    // the sizes on the device (cuBLAS's grouped GEMM takes no FP8). The
    // loader checked the weight [E, M, K] (transpose_rhs), k % 32 == 0 and
    // the scales.
    const auto &a = ins.as<sched::GroupedMatmulAttrs>();
    if (absl::Status s = needFp8Grouped(); !s.ok())
      return s;
    int64_t k = shape(0)[1], m = shape(1)[1];
    return fp8BlockGemm(buf(2), count(2), shape(1)[0], shape(0)[0], m, k, k, k,
                        m, false, a.scaleModeInput, a.scaleModeWeight);
  }
  if (absl::Status s = needAll(
          {{0, DType::F32}, {1, DType::F32}, {2, DType::I32}, {3, DType::F32}});
      !s.ok())
    return s;
  // cuBLAS's grouped GEMM takes each group's size on the host, so the sizes
  // come back from the device once (per routing: the forward's matmuls and
  // the backward's reuse the copy while no other instruction names it).
  // Megatron-LM and TransformerEngine read them back the same way; the
  // cost is a stream synchronisation and the program's CUDA graph.
  int64_t root = rootBuffer(program, ins.operands[2]);
  auto [copy, fresh] = hostCopies.try_emplace(root, result.hostSlots);
  if (fresh) {
    GpuLaunch &read = push(GpuLaunch::Kind::HostRead);
    read.args = {buf(2)};
    read.bytes = type(2).bytes();
    read.slot = result.hostSlots++;
  }
  GroupedGemmSpec spec;
  spec.wgrad = wgrad;
  spec.rows = shape(0)[0];
  spec.k = shape(0)[1];
  spec.groups = count(2);
  if (wgrad) {
    spec.m = shape(1)[1];
    spec.experts = shape(3)[0];
  } else {
    spec.transposeRhs = ins.as<sched::GroupedMatmulAttrs>().transposeRhs;
    spec.m = shape(3)[1];
    spec.experts = shape(1)[0];
  }
  GpuLaunch &l = push(GpuLaunch::Kind::GroupedGemm);
  l.args = {buf(0), buf(1), buf(3)};
  l.slot = copy->second;
  l.grouped = spec;
  return absl::OkStatus();
}

absl::Status Translator::copy() {
  const auto &a = ins.as<sched::CopyAttrs>();
  DType from = dtype(0), to = dtype(1);
  int64_t src = a.src[0], dst = a.dst[0];
  if (a.byRank)
    src += mesh.groupRank(rank, a.byRank->axes) * a.byRank->step;
  Shape srcStrides(a.src.begin() + 1, a.src.end()),
      dstStrides(a.dst.begin() + 1, a.dst.end());
  int64_t n = product(a.sizes);
  if (n == 0)
    return absl::OkStatus();
  Shape packed = rowMajorStrides(a.sizes);
  // Strides of extent-1 dimensions never move: compare only the others.
  auto isPacked = [&](const Shape &strides) {
    for (size_t d = 0; d < a.sizes.size(); ++d)
      if (a.sizes[d] != 1 && strides[d] != packed[d])
        return false;
    return true;
  };
  bool contiguous = isPacked(srcStrides) && isPacked(dstStrides);
  size_t inW = dtypeSize(from), outW = dtypeSize(to);
  if (from != to) {
    for (DType t : {from, to})
      if (t != DType::F32 && t != DType::BF16 && t != DType::F16 &&
          t != DType::I32)
        return absl::UnimplementedError(
            absl::StrCat("GPU copies convert f32, bf16, f16 and i32, not ",
                         sched::dtypeText(t)));
    if (!contiguous)
      return absl::UnimplementedError(
          "a converting copy on the GPU must be contiguous on both sides");
    kernel("weft_convert", gridFor(n),
           {at(buf(0), src * static_cast<int64_t>(inW)), i32(typeCode(from)),
            at(buf(1), dst * static_cast<int64_t>(outW)), i32(typeCode(to)),
            i64(n)});
    return absl::OkStatus();
  }
  if (contiguous) {
    memcpy(at(buf(1), dst * static_cast<int64_t>(outW)),
           at(buf(0), src * static_cast<int64_t>(inW)),
           n * static_cast<int64_t>(inW));
    return absl::OkStatus();
  }
  if (a.sizes.size() > WEFT_MAX_RANK)
    return absl::UnimplementedError(
        absl::StrCat("a strided copy of rank ", a.sizes.size(),
                     " is over the GPU's ", WEFT_MAX_RANK));
  if (inW != 4 && inW != 2 && inW != 1)
    return absl::UnimplementedError(
        "only 1-, 2- and 4-byte elements move strided on GPUs");
  WeftStridedIndex ix;
  std::memset(&ix, 0, sizeof(ix));
  ix.rank = static_cast<long>(a.sizes.size());
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    ix.dims[d] = a.sizes[d];
    ix.inStrides[d] = srcStrides[d];
    ix.outStrides[d] = dstStrides[d];
  }
  ix.inBase = src;
  ix.outBase = dst;
  kernel(inW == 4   ? "weft_strided_copy4"
         : inW == 2 ? "weft_strided_copy2"
                    : "weft_strided_copy1",
         gridFor(n), {buf(0), buf(1), bytesOf(ix)});
  return absl::OkStatus();
}

absl::Status Translator::fill() {
  DType t = dtype(0);
  double value = ins.as<sched::FillAttrs>().value;
  int64_t n = count(0);
  size_t width = dtypeSize(t);
  std::vector<uint8_t> element = elementBytes(value, t);
  bool zeros = std::all_of(element.begin(), element.end(),
                           [](uint8_t b) { return b == 0; });
  if (zeros) {
    zero(buf(0), n * static_cast<int64_t>(width));
    return absl::OkStatus();
  }
  if (width != 4 && width != 2)
    return absl::UnimplementedError(absl::StrCat(
        "the GPU fills 2- and 4-byte elements, not ", sched::dtypeText(t)));
  uint32_t bits = 0;
  std::memcpy(&bits, element.data(), width);
  kernel(width == 4 ? "weft_fill4" : "weft_fill2", gridFor(n),
         {buf(0), i32(static_cast<int32_t>(bits)), i64(n)});
  return absl::OkStatus();
}

absl::Status Translator::collectiveInstruction() {
  const auto &a = ins.as<sched::CollectiveAttrs>();
  // Moves without arithmetic take any element type in whole four-byte
  // words (an expert route's i32 counts, FP8 codes): the collectives move
  // f32 words. Reductions need f32.
  bool moves = a.kind == sched::CollectiveKind::AllToAll ||
               a.kind == sched::CollectiveKind::AllGather;
  int64_t g = mesh.groupSize(a.axes);
  int64_t width = static_cast<int64_t>(dtypeSize(dtype(0)));
  if (moves) {
    int64_t block =
        a.kind == sched::CollectiveKind::AllToAll ? count(0) / g : count(0);
    if (block * width % 4 != 0)
      return absl::UnimplementedError(absl::StrCat(
          "a ", sched::dtypeText(dtype(0)), " exchange of blocks of ", block,
          " elements on the GPU (it moves whole four-byte words)"));
  } else if (absl::Status s = needAll({{0, DType::F32}, {1, DType::F32}});
             !s.ok()) {
    return s;
  }
  // In four-byte words.
  int64_t n = count(0) * width / 4, outN = count(1) * width / 4;
  bool inPlace = ins.operands[0] == ins.operands[1];
  // A group of one moves nothing between ranks.
  if (g == 1) {
    if (!inPlace)
      memcpy(buf(1), buf(0), std::min(n, outN) * 4);
    return absl::OkStatus();
  }
  switch (a.kind) {
  case sched::CollectiveKind::AllReduce:
    if (!inPlace)
      memcpy(buf(1), buf(0), n * 4);
    collective(a.reduction == sched::Reduction::Max
                   ? GpuCollective::AllReduceMax
                   : GpuCollective::AllReduce,
               a.axes, buf(1), buf(1), n);
    if (a.reduction == sched::Reduction::Mean)
      scale(buf(1), n, 1.0 / static_cast<double>(g));
    return absl::OkStatus();
  case sched::CollectiveKind::ReduceScatter:
    if (a.reduction == sched::Reduction::Max)
      return absl::UnimplementedError(
          "a max reduce_scatter is not in the GPU runtime");
    collective(GpuCollective::ReduceScatter, a.axes, buf(0), buf(1), outN);
    if (a.reduction == sched::Reduction::Mean)
      scale(buf(1), outN, 1.0 / static_cast<double>(g));
    return absl::OkStatus();
  case sched::CollectiveKind::AllGather:
    collective(GpuCollective::AllGather, a.axes, buf(0), buf(1), n);
    return absl::OkStatus();
  case sched::CollectiveKind::AllToAll:
    collective(GpuCollective::AllToAll, a.axes, buf(0), buf(1), n / g);
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Translator::run() {
  switch (ins.op) {
  case Op::Launch:
    return launch();
  case Op::Gemm:
    return gemmInstruction();
  case Op::Attention:
  case Op::AttentionGrad: {
    bool grad = ins.op == Op::AttentionGrad;
    // q, k, v, out (and dout, dq, dk, dv) in one type, f32 or bf16; lse f32.
    if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
      return s;
    for (size_t i : {1, 2, 3})
      if (absl::Status s = need(i, {dtype(0)}); !s.ok())
        return s;
    if (grad)
      for (size_t i : {5, 6, 7, 8})
        if (absl::Status s = need(i, {dtype(0)}); !s.ok())
          return s;
    if ((shape(0)[3] > 128 || shape(2)[3] > 128) &&
        ins.as<sched::AttentionAttrs>().algorithm ==
            sched::AttentionAlgorithm::Flash)
      return absl::UnimplementedError(
          "GPU attention as 'flash' takes head dims <= 128 (the GEMM "
          "algorithm takes any)");
    // Positions and an lse gradient (ring attention) are the flash
    // kernels' (the lowering picks them).
    if (const auto &a = ins.as<sched::AttentionAttrs>();
        (a.hasPositions || a.hasLseGrad) &&
        a.algorithm != sched::AttentionAlgorithm::Flash)
      return absl::UnimplementedError(
          "GPU attention with positions or an lse gradient runs only as "
          "'flash'");
    // The kernels index query rows by block: with none, only the key and
    // value gradients (sums over no query) are left, zeros.
    if (count(4) == 0) {
      if (grad)
        for (size_t i : {7, 8})
          zero(buf(i), count(i) * static_cast<int64_t>(dtypeSize(dtype(i))));
      return absl::OkStatus();
    }
    return ins.as<sched::AttentionAttrs>().algorithm ==
                   sched::AttentionAlgorithm::GemmSoftmax
               ? gemmAttention(grad)
               : flashAttention(grad);
  }
  case Op::Embedding:
  case Op::EmbeddingGrad: {
    bool grad = ins.op == Op::EmbeddingGrad;
    // embedding: table, ids, out; embedding_grad: ids, dout, dtable.
    size_t tableAt = grad ? 2 : 0, idsAt = grad ? 0 : 1, rowsAt = grad ? 1 : 2;
    if (absl::Status s = needAll(
            {{tableAt, DType::F32}, {idsAt, DType::I32}, {rowsAt, DType::F32}});
        !s.ok())
      return s;
    auto [offset, total] =
        vocab(ins.as<sched::VocabAttrs>().vocabAxes, shape(tableAt)[0]);
    if (grad)
      zero(buf(tableAt), count(tableAt) * 4);
    GpuLaunch &gather =
        kernel("weft_embedding", gridFor(count(rowsAt)),
               {buf(tableAt), buf(idsAt), buf(rowsAt), i64(count(idsAt)),
                i64(shape(tableAt)[1]), i64(shape(tableAt)[0]), i64(offset),
                i64(total), i32(grad), error(), i32(index)});
    // It reads (or adds to) only its ids' rows of the table.
    gather.bytes = count(idsAt) * 4 + 2 * count(rowsAt) * 4;
    return absl::OkStatus();
  }
  case Op::Rope: {
    if (absl::Status s = needAll({{0, DType::F32}, {1, DType::F32}}); !s.ok())
      return s;
    const auto &a = ins.as<sched::RopeAttrs>();
    if (a.hasPositions)
      if (absl::Status s = need(2, {DType::I32}); !s.ok())
        return s;
    const Shape &sh = shape(0);
    kernel("weft_rope", gridFor(count(0) / 2),
           {buf(0), buf(1), i64(sh[0]), i64(sh[1]), i64(sh[2]), i64(sh[3]),
            f64(a.theta), f64(a.inverse ? -1.0 : 1.0), i64(a.positionOffset),
            a.hasPositions ? buf(2) : null()});
    return absl::OkStatus();
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad:
    return crossEntropy(ins.op == Op::CrossEntropyGrad);
  case Op::Reduce:
    return reduce();
  case Op::Softmax: {
    if (absl::Status s = needAll({{0, DType::F32}, {1, DType::F32}}); !s.ok())
      return s;
    const Shape &sh = shape(0);
    int64_t dim = ins.as<sched::SoftmaxAttrs>().dim;
    int64_t outer = product(sh, 0, dim), inner = product(sh, dim + 1);
    kernel("weft_softmax", gridFor(outer * inner),
           {buf(0), buf(1), i64(outer), i64(sh[dim]), i64(inner)});
    return absl::OkStatus();
  }
  case Op::Dropout: {
    if (absl::Status s = needAll({{0, DType::F32}, {1, DType::F32}}); !s.ok())
      return s;
    const auto &a = ins.as<sched::DropoutAttrs>();
    if (a.hasStep)
      if (absl::Status s = need(2, {DType::F32}); !s.ok())
        return s;
    if (a.block.hasMicrobatch)
      if (absl::Status s = need(2 + a.hasStep, {DType::F32}); !s.ok())
        return s;
    size_t at = 2 + a.hasStep + a.block.hasMicrobatch; // positions
    if (a.hasPositions)
      if (absl::Status s = need(at, {DType::I32}); !s.ok())
        return s;
    std::optional<MaskBlock> b =
        maskBlock(mesh, rank, shape(0), a.block.split, a.block.microbatches,
                  a.hasPositions);
    if (!b)
      return absl::UnimplementedError(
          "splits more than four dimensions of its input (a dropout mask's "
          "index takes four)");
    std::vector<GpuArg> args = {buf(0),
                                buf(1),
                                i64(count(1)),
                                f64(a.rate),
                                i64(a.seed),
                                a.hasStep ? buf(2) : null(),
                                a.block.hasMicrobatch ? buf(2 + a.hasStep)
                                                      : null(),
                                i64(a.block.microbatches),
                                i64(b->microbatchDim),
                                i64(b->microbatchStep)};
    for (const long long *dims : {b->local, b->start, b->global})
      for (int d = 0; d < 4; ++d)
        args.push_back(i64(dims[d]));
    args.push_back(a.hasPositions ? buf(at) : null());
    args.push_back(i64(b->positionsDim));
    kernel("weft_dropout", gridFor(count(1)), args);
    return absl::OkStatus();
  }
  case Op::Fp8Amax:
  case Op::Fp8Quantize:
  case Op::Fp8Encode:
  case Op::Fp8Decode: {
    bool amax = ins.op == Op::Fp8Amax, decode = ins.op == Op::Fp8Decode;
    // A maximum reads bf16 as stored, and so do an encode (its input) and a
    // decode (its out) on the side of their values, the codes on the other;
    // the values path computes in f32.
    bool quantize = ins.op == Op::Fp8Quantize;
    size_t values = decode ? 2 : 0, codes = 2 - values;
    absl::Status s = quantize ? needAll({{0, DType::F32}, {2, DType::F32}})
                              : need(values, {DType::F32, DType::BF16});
    if (!s.ok())
      return s;
    if (absl::Status s = need(1, {DType::F32}); !s.ok())
      return s;
    // Every kernel takes 4 dims: leading ones pad a smaller rank.
    Shape sh = shape(0), grid = shape(1);
    if (sh.size() > 4)
      return absl::UnimplementedError(absl::StrCat(sched::opName(ins.op),
                                                   " of rank ", sh.size(),
                                                   " on a GPU (at most 4)"));
    sh.insert(sh.begin(), 4 - sh.size(), 1);
    grid.insert(grid.begin(), 4 - grid.size(), 1);
    std::vector<GpuArg> dims = {i64(sh[0]),   i64(sh[1]),   i64(sh[2]),
                                i64(sh[3]),   i64(grid[0]), i64(grid[1]),
                                i64(grid[2]), i64(grid[3])};
    if (amax) {
      // Few blocks (a per-tensor or per-row maximum) are each split into
      // parts, so the whole GPU reads them; the parts combine atomically
      // into the zeroed maxima.
      int64_t blocks = count(1), size = count(0) / std::max<int64_t>(blocks, 1);
      int64_t parts = std::clamp<int64_t>(
          std::min(kMaxBlocks / std::max<int64_t>(blocks, 1),
                   (size + 4 * kThreads - 1) / (4 * kThreads)),
          1, kMaxBlocks);
      if (parts > 1)
        zero(buf(1), blocks * 4);
      std::vector<GpuArg> args = {buf(0), i32(dtype(0) == DType::BF16), buf(1)};
      args.insert(args.end(), dims.begin(), dims.end());
      args.push_back(i64(parts));
      kernel(
          "weft_fp8_amax",
          static_cast<unsigned>(std::min<int64_t>(blocks * parts, kMaxBlocks)),
          args);
      return absl::OkStatus();
    }
    // The values (with whether bf16, but for a quantization's), the maxima,
    // then the quantized values or the codes.
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    bool e4m3 = quantize ? a.e4m3 : dtype(codes) == DType::F8E4M3FN;
    std::vector<GpuArg> args = {buf(values)};
    if (!quantize)
      args.push_back(i32(dtype(values) == DType::BF16));
    args.push_back(buf(1));
    args.push_back(buf(codes));
    args.insert(args.end(), dims.begin(), dims.end());
    args.push_back(i32(e4m3));
    args.push_back(i32(a.pow2));
    kernel(quantize ? "weft_fp8_quantize"
           : decode ? "weft_fp8_decode"
                    : "weft_fp8_encode",
           gridFor(count(0)), args);
    return absl::OkStatus();
  }
  case Op::Fp8Cast: {
    if (absl::Status s = need(0, {DType::F32, DType::BF16}); !s.ok())
      return s;
    if (absl::Status s = need(1, {DType::F32}); !s.ok())
      return s;
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    sched::Fp8CastGeometry g = sched::fp8CastGeometry(shape(0), shape(1));
    kernel("weft_fp8_cast", gridFor(count(0)),
           {buf(0), i32(dtype(0) == DType::BF16), buf(1), buf(2), buf(3),
            i64(g.batch), i64(g.rows), i64(g.cols), i32(a.transpose),
            i32(dtype(2) == DType::F8E4M3FN), i32(a.pow2), i32(a.scaleMode),
            i64(g.blockRows), i64(g.blockCols)});
    return absl::OkStatus();
  }
  case Op::Fp8ScaleInv: {
    // A thread per block.
    if (absl::Status s = need(1, {DType::F32}); !s.ok())
      return s;
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    sched::Fp8CastGeometry g = sched::fp8CastGeometry(shape(0), shape(1));
    kernel("weft_fp8_scale_inv", gridFor(count(1)),
           {buf(1), buf(2), i64(count(1)), i64(g.batch), i64(g.rows),
            i64(g.cols), i32(a.transpose), i32(dtype(0) == DType::F8E4M3FN),
            i32(a.pow2), i32(a.scaleMode), i64(g.blockRows), i64(g.blockCols)});
    return absl::OkStatus();
  }
  case Op::Fp8GroupQuantize:
  case Op::Fp8GroupCast: {
    // A thread per expert and column (weft_fp8_group_cast); a values
    // quantization's extra row of blocks zeroes the rows after the groups.
    bool cast = ins.op == Op::Fp8GroupCast;
    if (absl::Status s = needAll({{0, DType::F32}, {1, DType::I32}}); !s.ok())
      return s;
    if (absl::Status s = cast ? need(3, {DType::F32}) : need(2, {DType::F32});
        !s.ok())
      return s;
    const auto &a = ins.as<sched::Fp8GroupAttrs>();
    int64_t n = shape(0)[0], cols = shape(0)[1];
    if (cols == 0)
      return absl::OkStatus();
    GpuLaunch &l = kernel("weft_fp8_group_cast", 1,
                          {buf(0), buf(1), i64(count(1)), i64(a.experts),
                           i64(n), i64(cols), i64(a.tileRows),
                           i32(cast ? dtype(2) == DType::F8E4M3FN : a.e4m3),
                           i32(a.pow2), cast ? null() : buf(2),
                           cast ? buf(2) : null(), cast ? buf(3) : null()});
    l.grid[0] = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
    l.grid[1] = static_cast<unsigned>(a.experts + (cast ? 0 : 1));
    return absl::OkStatus();
  }
  case Op::LayerNormGrad:
  case Op::RmsNormGrad:
    return normGrad(ins.op == Op::RmsNormGrad);
  case Op::OneHot: {
    if (absl::Status s = needAll({{0, DType::I32}, {1, DType::F32}}); !s.ok())
      return s;
    kernel("weft_one_hot", gridFor(count(1)),
           {buf(0), buf(1), i64(count(0)), i64(shape(1).back())});
    return absl::OkStatus();
  }
  case Op::TopK:
  case Op::TopKGating: {
    if (absl::Status s =
            needAll({{0, DType::F32}, {1, DType::F32}, {2, DType::I32}});
        !s.ok())
      return s;
    bool gating = ins.op == Op::TopKGating;
    int64_t k = gating ? ins.as<sched::TopKGatingAttrs>().k
                       : ins.as<sched::TopKAttrs>().k;
    bool normalize = gating && ins.as<sched::TopKGatingAttrs>().normalize;
    int64_t n = shape(0).back(), rows = n ? count(0) / n : 0;
    kernel("weft_topk", gridFor(rows),
           {buf(0), buf(1), buf(2), i64(rows), i64(n), i64(k), i32(gating),
            i32(normalize)});
    return absl::OkStatus();
  }
  case Op::ExpertRoute:
    return expertRoute();
  case Op::ExpertDispatch:
  case Op::ExpertScatter:
  case Op::ExpertCombine:
  case Op::ExpertGather:
    return expert();
  case Op::GroupedMatmul:
    return groupedMatmul(/*wgrad=*/false);
  case Op::GroupedMatmulWgrad:
    return groupedMatmul(/*wgrad=*/true);
  case Op::Copy:
    return copy();
  case Op::Fill:
    return fill();
  case Op::Collective:
    return collectiveInstruction();
  case Op::Send:
  case Op::Recv:
    return absl::UnimplementedError(
        "point-to-point transfers are not in the GPU runtime yet");
  case Op::RingShift: {
    const auto &a = ins.as<sched::PeerAttrs>();
    GpuLaunch &l = push(GpuLaunch::Kind::Collective);
    l.collective = GpuCollective::RingShift;
    l.axes = {a.axis};
    l.delta = a.delta;
    l.tag = a.tag;
    l.bytes = type(0).bytes();
    l.args = {buf(0), buf(1)};
    return absl::OkStatus();
  }
  case Op::RaggedAllToAll:
    return raggedAllToAll();
  case Op::Record:
  case Op::Wait: {
    GpuLaunch &l = push(ins.op == Op::Record ? GpuLaunch::Kind::Record
                                             : GpuLaunch::Kind::Wait);
    l.event = ins.as<sched::EventAttrs>().event;
    return absl::OkStatus();
  }
  }
  return absl::UnimplementedError("an instruction the GPU runtime lacks");
}
} // namespace

absl::StatusOr<GpuProgram> gpuProgram(const sched::SchedBundle &bundle,
                                      const sched::Program &program,
                                      const MeshSpec &mesh, int64_t rank) {
  GpuProgram result;
  // The GPU's kernels and cuBLASLt want operands 256-byte aligned: a CPU
  // bundle's 64-byte arena offsets say it was not compiled for one.
  if (program.align % 256 != 0)
    return absl::FailedPreconditionError(absl::StrCat(
        bundle.dir, ": program ", program.name, " aligns its buffers to ",
        program.align,
        " bytes, not the GPU's 256: the bundle was compiled for the CPU "
        "(compile it with weftc compile --target cuda)"));
  HostCopies hostCopies;
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    Translator t(program, mesh, rank, static_cast<int64_t>(i), result,
                 hostCopies);
    if (absl::Status s = t.run(); !s.ok())
      return absl::Status(
          s.code(),
          absl::StrCat(bundle.dir, ": program ", program.name, ", instruction ",
                       i, " (", sched::opName(program.instructions[i].op),
                       "): ", s.message()));
    // The bundle does not say which operands an instruction writes: any
    // other instruction naming a copied buffer's memory may change it.
    const sched::Instruction &ins = program.instructions[i];
    if (ins.op != Op::GroupedMatmul && ins.op != Op::GroupedMatmulWgrad)
      for (int64_t operand : ins.operands)
        hostCopies.erase(rootBuffer(program, operand));
  }
  return result;
}

absl::StatusOr<GroupedGemmWork>
groupedGemmWork(const GroupedGemmSpec &spec, const int32_t *sizes, uint64_t a,
                uint64_t b, uint64_t out, absl::string_view what) {
  absl::StatusOr<std::vector<int64_t>> starts =
      groupStarts(sizes, spec.groups, spec.rows, what);
  if (!starts.ok())
    return starts.status();
  constexpr int64_t f32 = sizeof(float);
  GroupedGemmWork work;
  if (spec.k == 0 || spec.m == 0) {
    // No products (cuBLAS takes no leading dimension of 0): a forward's
    // rows are sums of nothing, a wgrad's output is empty.
    work.zeroFrom = out;
    work.zeroBytes = static_cast<size_t>(
        (spec.wgrad ? spec.experts * spec.k : spec.rows) * spec.m * f32);
    return work;
  }
  if (spec.wgrad) {
    // An expert with no rows anywhere gets a zero gradient (Megatron-LM#1877);
    // every group accumulates into its expert's block.
    work.zeroFrom = out;
    work.zeroBytes = static_cast<size_t>(spec.experts * spec.k * spec.m * f32);
  } else {
    work.zeroFrom = out + (*starts)[spec.groups] * spec.m * f32;
    work.zeroBytes = static_cast<size_t>((spec.rows - (*starts)[spec.groups]) *
                                         spec.m * f32);
  }
  for (int64_t g = 0; g < spec.groups; ++g) {
    int64_t begin = (*starts)[g], rows = (*starts)[g + 1] - begin;
    if (rows == 0)
      continue;
    GemmProblem p;
    uint64_t expert =
        static_cast<uint64_t>(g % spec.experts) * spec.k * spec.m * f32;
    if (spec.wgrad) {
      // out[e] += lhs_g^T rhs_g: [k, rows] x [rows, m].
      p.shape.transA = true;
      p.shape.m = spec.k;
      p.shape.n = spec.m;
      p.shape.k = rows;
      p.shape.beta = 1;
      p.operands = {a + begin * spec.k * f32, b + begin * spec.m * f32,
                    out + expert};
    } else {
      p.shape.transB = spec.transposeRhs;
      p.shape.m = rows;
      p.shape.n = spec.m;
      p.shape.k = spec.k;
      p.operands = {a + begin * spec.k * f32, b + expert,
                    out + begin * spec.m * f32};
    }
    work.problems.push_back(p);
  }
  return work;
}

} // namespace weft::runtime

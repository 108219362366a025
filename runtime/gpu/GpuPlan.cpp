//===- GpuPlan.cpp - a program's steps as GPU launches --------------------===//
//
// One rule per op, mirroring Kernels.cpp's binders. Steps that compute in
// f32 get f32 copies of their narrow (bf16) operands and results, widened
// before and rounded after, as the CPU executor does; data movement, casts,
// GEMMs and attention read narrow values directly.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/GpuPlan.h"

#include "runtime/exec/Kernels.h"
#include "runtime/exec/StepAttrs.h"
#include "runtime/gpu/kernels/OpsAbi.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <functional>

namespace weft::runtime {
namespace {
using Shape = std::vector<int64_t>;
constexpr unsigned kThreads = 256;
/// Grid-stride kernels stop growing the grid here (132 SMs x 16 blocks
/// keeps every multiprocessor busy).
constexpr int64_t kMaxBlocks = 132 * 16;

GpuArg buffer(GpuBuffer::Kind kind, int64_t id) {
  GpuArg a;
  a.kind = GpuArg::Kind::Buffer;
  a.buffer = {kind, id};
  return a;
}
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

/// How many chunks a two-pass reduction (ops.cu's weft_reduce_partial,
/// weft_norm_grad_params) splits `length` reduced elements into, with
/// `columns` blocks across the outputs and `depth` threads on each output:
/// about 2048 blocks in all, enough to fill the GPU, but at least 16
/// elements a thread.
int64_t partialChunks(int64_t columns, int64_t length, int64_t depth) {
  constexpr int64_t kPartialBlocks = 2048;
  int64_t wide = (kPartialBlocks + columns - 1) / std::max<int64_t>(columns, 1);
  int64_t deep = (length + 16 * depth - 1) / (16 * depth);
  return std::clamp<int64_t>(std::min(wide, deep), 1, 65535);
}

unsigned gridFor(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks)));
}

int typeCode(DType t) {
  return t == DType::F32    ? WEFT_TYPE_F32
         : t == DType::BF16 ? WEFT_TYPE_BF16
                            : WEFT_TYPE_I32;
}

class Planner {
public:
  Planner(const ProgramSpec &spec, const MeshSpec &mesh, GpuPlanOptions options)
      : spec(spec), mesh(mesh), options(options) {
    plan.storageOf.resize(spec.values.size());
    for (size_t i = 0; i < spec.values.size(); ++i)
      plan.storageOf[i] = static_cast<int64_t>(i);
  }

  /// Plans step `index`: a collective step on the communication stream
  /// (after the compute stream's work so far), any other on the compute
  /// stream, first waiting for each pending collective whose bytes it reads
  /// or overwrites (the memory plan reuses arena bytes once dead).
  absl::Status step(int64_t index, const StepSpec &s);
  absl::Status planStep(const StepSpec &s);
  /// Joins the streams and lays out the scratch regions.
  GpuProgramPlan finish();

private:
  const ValueSpec &value(int64_t id) const { return spec.values[id]; }
  const Shape &shape(int64_t id) const { return spec.values[id].shape; }
  int64_t count(int64_t id) const { return spec.values[id].numElements(); }
  GpuArg raw(int64_t id) const { return buffer(GpuBuffer::Kind::Value, id); }
  /// The value as f32: when it is narrow, its f32 copy in the step's
  /// scratch (widened before the step, rounded back after it).
  GpuArg wide(int64_t id) {
    if (!isNarrowFloat(value(id).dtype))
      return raw(id);
    if (shadowStep != current) {
      shadowStep = current;
      shadows.clear();
    }
    auto it = shadows.find(id);
    if (it == shadows.end())
      it = shadows.emplace(id, scratch(count(id) * 4)).first;
    return it->second;
  }
  GpuArg scratch(int64_t bytes) {
    if (scratchStep != current) { // A new step reuses the arena from 0.
      scratchStep = current;
      scratchUsed = 0;
    }
    // Collective steps run beside compute steps, so their scratch is a
    // region of its own (placed after the compute steps' in finish()).
    plan.scratchOffsets.push_back(scratchUsed);
    plan.scratchBytes.push_back(bytes);
    commScratch.push_back(inComm);
    scratchUsed += (bytes + 255) / 256 * 256;
    int64_t &most = inComm ? commArenaBytes : plan.scratchArenaBytes;
    most = std::max(most, scratchUsed);
    return buffer(GpuBuffer::Kind::Scratch,
                  static_cast<int64_t>(plan.scratchOffsets.size()) - 1);
  }
  void sync(GpuLaunch::Kind kind, int64_t event, bool comm) {
    GpuLaunch l;
    l.kind = kind;
    l.step = current;
    l.event = event;
    l.comm = comm;
    plan.launches.push_back(std::move(l));
  }
  /// The arena bytes a step's operands and results occupy.
  std::vector<std::pair<int64_t, int64_t>> arenaRanges(const StepSpec &s) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const std::vector<int64_t> *ids : {&s.operands, &s.results})
      for (int64_t id : *ids)
        if (value(id).kind == ValueSpec::Kind::Arena)
          ranges.push_back(
              {value(id).offset, value(id).offset + value(id).bytes()});
    return ranges;
  }
  /// `arg` (a buffer) `bytes` further in.
  static GpuArg at(GpuArg arg, int64_t bytes) {
    arg.buffer.offset += bytes;
    return arg;
  }
  void communicate(const char *what, const std::vector<std::string> &axes,
                   GpuArg in, GpuArg out, int64_t count) {
    // A collective inside a compute step (vocabulary-parallel
    // cross-entropy) must not run beside one on the communication stream:
    // two in flight on one NCCL communicator can deadlock.
    if (!inComm && !pending.empty()) {
      sync(GpuLaunch::Kind::Wait, pending.back().event, false);
      pending.clear();
    }
    GpuLaunch l;
    l.kind = GpuLaunch::Kind::Collective;
    l.step = current;
    l.collective = what;
    l.axes = axes;
    l.count = count;
    l.args = {in, out};
    plan.launches.push_back(std::move(l));
  }
  /// A vocabulary-parallel step's block: rows or columns [offset, offset +
  /// local) of `total`, split over `axes` (none: the whole vocabulary).
  struct VocabBlock {
    int64_t offset = 0, total = 0;
    std::vector<std::string> axes;
  };
  absl::StatusOr<VocabBlock> vocabBlock(const StepSpec &s, int64_t local) {
    VocabBlock v;
    v.total = local;
    auto it = s.attrs.find("vocab_axes");
    if (it == s.attrs.end())
      return v;
    for (const auto &a : *it)
      if (a.is_string() && mesh.axisIndex(a.get<std::string>()) >= 0)
        v.axes.push_back(a.get<std::string>());
    if (v.axes.empty() || v.axes.size() != it->size())
      return absl::InvalidArgumentError("'vocab_axes' must name mesh axes");
    v.offset = local * mesh.groupRank(options.rank, v.axes);
    v.total = local * mesh.groupSize(v.axes);
    return v;
  }
  void gemm(const GemmShape &g, GpuArg a, GpuArg b, GpuArg c,
            GpuArg bias = GpuArg(), GpuArg aux = GpuArg()) {
    GpuLaunch l;
    l.kind = GpuLaunch::Kind::Gemm;
    l.step = current;
    l.gemm = g;
    l.args = {a, b, c, bias, aux};
    plan.launches.push_back(std::move(l));
  }
  GpuLaunch &kernel(const std::string &name, unsigned grid,
                    std::vector<GpuArg> args, unsigned block = kThreads) {
    GpuLaunch l;
    l.step = current;
    l.kernel = name;
    l.grid[0] = grid;
    l.block = block;
    l.args = std::move(args);
    plan.launches.push_back(std::move(l));
    return plan.launches.back();
  }
  void convert(GpuArg from, DType fromType, GpuArg to, DType toType,
               int64_t n) {
    kernel("weft_convert", gridFor(n),
           {from, i32(typeCode(fromType)), to, i32(typeCode(toType)), i64(n)});
  }
  void zero(GpuArg target, int64_t bytes) {
    GpuLaunch l;
    l.kind = GpuLaunch::Kind::Zero;
    l.step = current;
    l.args = {target};
    l.bytes = bytes;
    plan.launches.push_back(std::move(l));
  }
  /// Copies the elements of `dims` from `from` to `to` along the strides.
  absl::Status stridedCopy(GpuArg from, GpuArg to, size_t width,
                           const Shape &dims, const Shape &inStrides,
                           int64_t inBase, const Shape &outStrides,
                           int64_t outBase);
  /// all_reduce (a bucket), all_gather, reduce_scatter and shard_slice, in
  /// f32 (narrow values through copies, as the CPU runtime does).
  absl::Status collective(const StepSpec &s);
  absl::Status fused(const StepSpec &s);
  absl::Status reduce(const StepSpec &s, int kind);
  /// The GEMM of a matmul step's operands into result `c`.
  absl::StatusOr<GemmShape> matmulShape(const StepSpec &s, int64_t c);
  absl::Status matmul(const StepSpec &s);
  absl::Status matmulEpilogue(const StepSpec &s);
  absl::Status attention(const StepSpec &s, bool grad);
  absl::Status attentionGemms(const StepSpec &s, bool grad);
  absl::Status crossEntropy(const StepSpec &s, bool grad);
  absl::Status norm(const StepSpec &s, bool rms);
  /// Whether a norm-gradient step's values are all bf16, which its kernels
  /// then read and write as stored.
  bool allBf16NormGrad(const StepSpec &s) {
    if (s.op != "weft.layer_norm_grad" && s.op != "weft.rms_norm_grad")
      return false;
    for (const std::vector<int64_t> *ids : {&s.operands, &s.results})
      for (int64_t id : *ids)
        if (value(id).dtype != DType::BF16)
          return false;
    return true;
  }
  /// Whether a cross-entropy step's logits (and its gradient's result) are
  /// bf16, which its kernels then read and write as stored.
  bool bf16CrossEntropy(const StepSpec &s) {
    bool grad = s.op == "weft.cross_entropy_grad";
    if ((s.op != "weft.cross_entropy" && !grad) || s.operands.empty() ||
        s.results.empty())
      return false;
    return value(s.operands[0]).dtype == DType::BF16 &&
           (!grad || value(s.results[0]).dtype == DType::BF16);
  }
  /// Whether the kernels of step `s` read (an operand) or write (a result)
  /// narrow value `id` as it is stored, so it needs no f32 copy: generated
  /// kernels' bf16 values, reductions' bf16 operands, every value of an
  /// all-bf16 norm gradient, and bf16 logits (and their gradient).
  bool keepsStored(const StepSpec &s, int64_t id, bool operand) {
    if (value(id).dtype != DType::BF16)
      return false;
    if (s.op == "weft.fused")
      return true;
    if (s.op == "weft.reduce_sum" || s.op == "weft.reduce_mean" ||
        s.op == "weft.reduce_max")
      return operand;
    if (bf16CrossEntropy(s))
      return operand ? id == s.operands[0] : id == s.results[0];
    return allBf16NormGrad(s);
  }

  const ProgramSpec &spec;
  const MeshSpec &mesh;
  GpuPlanOptions options;
  GpuProgramPlan plan;
  std::map<int64_t, GpuArg> shadows; // This step's f32 copies, by value.
  /// Collective steps on the communication stream not yet waited for by
  /// the compute stream: their event and the arena bytes they touch.
  struct Pending {
    int64_t event;
    std::vector<std::pair<int64_t, int64_t>> ranges;
  };
  std::vector<Pending> pending;
  bool inComm = false;
  std::vector<bool> commScratch;
  int64_t commArenaBytes = 0;
  int64_t shadowStep = -1;
  int64_t current = -1, scratchStep = -1, scratchUsed = 0;
};

absl::Status Planner::stridedCopy(GpuArg from, GpuArg to, size_t width,
                                  const Shape &dims, const Shape &inStrides,
                                  int64_t inBase, const Shape &outStrides,
                                  int64_t outBase) {
  if (dims.size() > WEFT_MAX_RANK)
    return absl::UnimplementedError(absl::StrCat(
        "rank ", dims.size(), " is over the GPU kernels' ", WEFT_MAX_RANK));
  WeftStridedIndex ix;
  std::memset(&ix, 0, sizeof(ix));
  ix.rank = static_cast<long>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    ix.dims[d] = dims[d];
    ix.inStrides[d] = inStrides[d];
    ix.outStrides[d] = outStrides[d];
  }
  ix.inBase = inBase;
  ix.outBase = outBase;
  if (width != 4 && width != 2)
    return absl::UnimplementedError("only 2- and 4-byte elements move on GPUs");
  kernel(width == 4 ? "weft_strided_copy4" : "weft_strided_copy2",
         gridFor(product(dims)), {from, to, bytesOf(ix)});
  return absl::OkStatus();
}

absl::Status Planner::collective(const StepSpec &s) {
  std::vector<std::string> axes;
  if (auto it = s.attrs.find("axes"); it != s.attrs.end() && it->is_array())
    for (const auto &a : *it)
      if (a.is_string())
        axes.push_back(a.get<std::string>());
  for (const std::string &a : axes)
    if (mesh.axisIndex(a) < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("names axis '", a, "', which the mesh lacks"));
  if (axes.empty())
    return absl::InvalidArgumentError("needs attribute 'axes'");
  int64_t g = mesh.groupSize(axes), me = mesh.groupRank(options.rank, axes);
  auto call = [&](const char *what, GpuArg in, GpuArg out, int64_t count) {
    communicate(what, axes, in, out, count);
  };
  if (s.op == "weft.all_reduce") {
    // One bucket: the operands packed back to back, reduced at once.
    int64_t total = 0;
    for (int64_t id : s.operands)
      total += count(id);
    GpuArg bucket = scratch(total * 4);
    int64_t at = 0;
    for (int64_t id : s.operands) {
      kernel("weft_scale_copy", gridFor(count(id)),
             {wide(id), Planner::at(bucket, at * 4), i64(count(id)), f32(1)});
      at += count(id);
    }
    call("all_reduce", bucket, bucket, total);
    bool mean = s.attrs.value("reduction", "") == "mean";
    at = 0;
    for (int64_t id : s.results) {
      kernel("weft_scale_copy", gridFor(count(id)),
             {Planner::at(bucket, at * 4), wide(id), i64(count(id)),
              f32(mean ? 1.0 / g : 1.0)});
      at += count(id);
    }
    return absl::OkStatus();
  }
  if (s.operands.size() != 1 || s.results.size() != 1)
    return absl::InvalidArgumentError("needs one operand and one result");
  int64_t x = s.operands[0], y = s.results[0];
  // A tensor split along `dim` into g blocks: [outer, g * b, inner] walked
  // as [g, outer, b inner], blocks[j] = whole[:, j b : (j + 1) b, :] packed
  // one after another in `blocks`.
  struct Split {
    Shape dims, wholeStrides, blockStrides;
    int64_t blockRow, block; // Elements in a block's row, in a block.
  };
  auto split = [&](const Shape &whole,
                   const char *attr) -> absl::StatusOr<Split> {
    int64_t dim = attrI(s, attr);
    if (dim < 0 || dim >= static_cast<int64_t>(whole.size()))
      return absl::InvalidArgumentError(
          absl::StrCat("'", attr, "' is out of range"));
    int64_t outer = product(whole, 0, dim), inner = product(whole, dim + 1),
            b = whole[dim] / g;
    return Split{{g, outer, b * inner},
                 {b * inner, whole[dim] * inner, 1},
                 {outer * b * inner, b * inner, 1},
                 b * inner,
                 outer * b * inner};
  };
  auto pack = [&](GpuArg from, const Split &p, GpuArg to) {
    return stridedCopy(from, to, 4, p.dims, p.wholeStrides, 0, p.blockStrides,
                       0);
  };
  auto unpack = [&](GpuArg from, const Split &p, GpuArg to) {
    return stridedCopy(from, to, 4, p.dims, p.blockStrides, 0, p.wholeStrides,
                       0);
  };
  bool gather = s.op == "weft.all_gather";
  absl::StatusOr<Split> p =
      split(gather ? shape(y) : shape(x),
            s.op == "weft.all_to_all" ? "split_dim" : "dim");
  if (!p.ok())
    return p.status();
  if (s.op == "weft.shard_slice") // This rank's block, no data moved.
    return stridedCopy(wide(x), wide(y), 4, {p->dims[1], p->blockRow},
                       {p->wholeStrides[1], 1}, me * p->blockRow,
                       {p->blockRow, 1}, 0);
  GpuArg blocks = scratch(g * p->block * 4);
  if (gather) {
    call("all_gather", wide(x), blocks, p->block);
    return unpack(blocks, *p, wide(y));
  }
  if (absl::Status st = pack(wide(x), *p, blocks); !st.ok())
    return st;
  if (s.op == "weft.reduce_scatter") {
    call("reduce_scatter", blocks, wide(y), p->block);
    return absl::OkStatus();
  }
  if (s.op == "weft.all_to_all") {
    // Blocks out along split_dim; the ones received concatenated along
    // concat_dim in group order.
    absl::StatusOr<Split> q = split(shape(y), "concat_dim");
    if (!q.ok())
      return q.status();
    if (q->block != p->block)
      return absl::InvalidArgumentError("all_to_all changes the size");
    GpuArg received = scratch(g * p->block * 4);
    call("all_to_all", blocks, received, p->block);
    return unpack(received, *q, wide(y));
  }
  return absl::UnimplementedError(
      absl::StrCat(s.op, " is not in the GPU runtime yet"));
}

absl::Status Planner::fused(const StepSpec &s) {
  auto name = s.attrs.find("kernel");
  if (name == s.attrs.end() || !name->is_string())
    return absl::InvalidArgumentError("weft.fused: no kernel name");
  // Generated kernels read and write bf16 as it is stored
  // (codegen/CudaSource.cpp); other narrow types through f32 copies.
  std::vector<GpuArg> args;
  for (int64_t id : s.operands)
    args.push_back(value(id).dtype == DType::BF16 ? raw(id) : wide(id));
  for (int64_t id : s.results)
    args.push_back(value(id).dtype == DType::BF16 ? raw(id) : wide(id));
  int64_t n = count(s.results.front());
  args.push_back(i64(n));
  // A row group runs one block per row of its results' last dimension; an
  // element group grid-strides with four elements per thread.
  const Shape &out = shape(s.results.front());
  int64_t width = out.empty() ? 1 : std::max<int64_t>(1, out.back());
  unsigned grid = attrB(s, "rows") ? static_cast<unsigned>(n / width)
                                   : gridFor((n + 3) / 4);
  kernel(name->get<std::string>() + "_cuda", std::max(1u, grid), args);
  return absl::OkStatus();
}

absl::Status Planner::reduce(const StepSpec &s, int kind) {
  const Shape &in = shape(s.operands[0]);
  Shape dims = attrInts(s, "dims"), strides = stridesOf(in);
  WeftReduceIndex ix;
  std::memset(&ix, 0, sizeof(ix));
  if (in.size() > WEFT_MAX_RANK)
    return absl::UnimplementedError("reduction of rank over 8");
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(),
                             static_cast<int64_t>(d)) != dims.end();
    long &rank = reduced ? ix.reducedRank : ix.keptRank;
    (reduced ? ix.reducedDims : ix.keptDims)[rank] = in[d];
    (reduced ? ix.reducedStrides : ix.keptStrides)[rank] = strides[d];
    ++rank;
  }
  int64_t outputs = count(s.results[0]), n = count(s.operands[0]);
  int64_t reduced = outputs ? n / outputs : 0;
  bool bf16In = keepsStored(s, s.operands[0], /*operand=*/true);
  // ops.cu's two passes: blocks of `width` outputs by chunks of the reduced
  // elements.
  int width = outputs >= 32 ? 32 : 1;
  int64_t columns = (outputs + width - 1) / width;
  int64_t chunks = partialChunks(columns, reduced, kThreads / width);
  int64_t chunk = (reduced + chunks - 1) / chunks;
  GpuArg partials = scratch(std::max<int64_t>(chunks * outputs, 1) * 8);
  GpuLaunch &partial =
      kernel("weft_reduce_partial",
             static_cast<unsigned>(std::max<int64_t>(columns, 1)),
             {bf16In ? raw(s.operands[0]) : wide(s.operands[0]), i32(bf16In),
              partials, i64(outputs), i64(reduced), i64(chunk), i32(width),
              bytesOf(ix), i32(kind)});
  partial.grid[1] = static_cast<unsigned>(chunks);
  kernel("weft_reduce_finish", gridFor(outputs),
         {partials, wide(s.results[0]), i64(outputs), i64(chunks), i64(reduced),
          i32(kind)});
  return absl::OkStatus();
}

absl::StatusOr<GemmShape> Planner::matmulShape(const StepSpec &s, int64_t c) {
  int64_t a = s.operands[0], b = s.operands[1];
  const Shape &as = shape(a), &bs = shape(b);
  GemmShape g;
  g.transA = attrB(s, "transpose_lhs");
  g.transB = attrB(s, "transpose_rhs");
  size_t ar = as.size(), br = bs.size();
  g.m = g.transA ? as[ar - 1] : as[ar - 2];
  g.k = g.transA ? as[ar - 2] : as[ar - 1];
  g.n = g.transB ? bs[br - 2] : bs[br - 1];
  g.batch = count(c) / (g.m * g.n);
  g.strideA = ar > 2 ? g.m * g.k : 0;
  g.strideB = br > 2 ? g.k * g.n : 0;
  g.strideC = g.m * g.n;
  // [B..., M, K] by one weight: the batches' rows are one [B... M, K]
  // matrix, and one GEMM of B times the rows beats B small ones.
  if (g.strideB == 0 && !g.transA) {
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = g.strideC = 0;
  }
  g.type = value(c).dtype;
  if (value(a).dtype != g.type || value(b).dtype != g.type)
    return absl::UnimplementedError(
        "GPU GEMMs take operands of the result's element type");
  return g;
}

absl::Status Planner::matmul(const StepSpec &s) {
  absl::StatusOr<GemmShape> g = matmulShape(s, s.results[0]);
  if (!g.ok())
    return g.status();
  gemm(*g, raw(s.operands[0]), raw(s.operands[1]), raw(s.results[0]));
  return absl::OkStatus();
}

absl::Status Planner::matmulEpilogue(const StepSpec &s) {
  absl::StatusOr<GemmShape> g = matmulShape(s, s.results[0]);
  if (!g.ok())
    return g.status();
  g->epilogue = attrEpilogue(s);
  if (absl::Status st = checkEpilogueArity(s, g->epilogue); !st.ok())
    return st;
  // cuBLASLt reads and writes the aux matrix with C's row width, which it
  // wants a multiple of 8 (weft-gemm-epilogue only makes such ones).
  if (g->hasAux() && g->n % 8 != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "a GELU epilogue needs a row width divisible by 8, got ", g->n));
  GpuArg bias = g->hasBias() ? raw(s.operands[2]) : null();
  GpuArg aux = g->epilogue == GemmEpilogue::DGelu ? raw(s.operands[2])
               : g->hasAux()                      ? raw(s.results[1])
                                                  : null();
  gemm(*g, raw(s.operands[0]), raw(s.operands[1]), raw(s.results[0]), bias,
       aux);
  return absl::OkStatus();
}

absl::Status Planner::attention(const StepSpec &s, bool grad) {
  const Shape &q = shape(s.operands[0]), &k = shape(s.operands[1]),
              &v = shape(s.operands[2]);
  int64_t batch = q[0], S = q[1], hq = q[2], d = q[3], T = k[1], hkv = k[2],
          dv = v[3];
  if (d > 128 || dv > 128)
    return absl::UnimplementedError("GPU attention takes head dims <= 128");
  DType type = value(s.operands[0]).dtype;
  if (type != DType::F32 && type != DType::BF16)
    return absl::UnimplementedError("GPU attention takes f32 or bf16");
  // Tensor cores through cuBLASLt when the scores fit the budget and every
  // row is 16-byte aligned, as cuBLASLt wants.
  int64_t width = dtypeSize(type), align = 16 / width;
  int64_t scoreBytes = batch * hq * S * T * (4 + width);
  if (scoreBytes <= options.attentionScratchBytes && S % align == 0 &&
      T % align == 0 && d % align == 0 && dv % align == 0)
    return attentionGemms(s, grad);
  std::string suffix = type == DType::BF16 ? "_bf16" : "";
  std::vector<GpuArg> sizes = {i32(batch),
                               i32(S),
                               i32(T),
                               i32(hq),
                               i32(hkv),
                               i32(d),
                               i32(dv),
                               f32(attrF(s, "scale")),
                               i32(attrB(s, "causal"))};
  auto with = [&](std::vector<GpuArg> args) {
    args.insert(args.end(), sizes.begin(), sizes.end());
    return args;
  };
  unsigned queryTiles = static_cast<unsigned>((S + 63) / 64);
  if (!grad) {
    // lse is f32 in the IR; o has q's type.
    GpuLaunch &l =
        kernel("weft_attention_forward" + suffix, queryTiles,
               with({raw(s.operands[0]), raw(s.operands[1]), raw(s.operands[2]),
                     raw(s.results[0]), wide(s.results[1])}),
               64);
    l.grid[1] = static_cast<unsigned>(hq);
    l.grid[2] = static_cast<unsigned>(batch);
    return absl::OkStatus();
  }
  GpuArg delta = scratch(batch * hq * S * 4);
  GpuLaunch &dq =
      kernel("weft_attention_backward_dq" + suffix, queryTiles,
             with({raw(s.operands[0]), raw(s.operands[1]), raw(s.operands[2]),
                   raw(s.operands[3]), wide(s.operands[4]), raw(s.operands[5]),
                   raw(s.results[0]), delta}),
             64);
  dq.grid[1] = static_cast<unsigned>(hq);
  dq.grid[2] = static_cast<unsigned>(batch);
  GpuLaunch &dkv =
      kernel("weft_attention_backward_dkv" + suffix,
             static_cast<unsigned>((T + 31) / 32),
             with({raw(s.operands[0]), raw(s.operands[1]), raw(s.operands[2]),
                   wide(s.operands[4]), delta, raw(s.operands[5]),
                   raw(s.results[1]), raw(s.results[2])}),
             32);
  dkv.grid[1] = static_cast<unsigned>(hkv);
  dkv.grid[2] = static_cast<unsigned>(batch);
  return absl::OkStatus();
}

absl::Status Planner::attentionGemms(const StepSpec &s, bool grad) {
  int64_t q = s.operands[0], k = s.operands[1], v = s.operands[2];
  const Shape &qs = shape(q), &ks = shape(k), &vs = shape(v);
  int64_t B = qs[0], S = qs[1], hq = qs[2], d = qs[3], T = ks[1], hkv = ks[2],
          dv = vs[3], g = hq / hkv;
  DType type = value(q).dtype;
  int64_t es = dtypeSize(type), plane = S * T;
  float scale = static_cast<float>(attrF(s, "scale"));
  bool causal = attrB(s, "causal");
  // scores [B, Hq, S, T] f32 (later dP), probs of q's type (later dS).
  GpuArg scores = scratch(B * hq * plane * 4),
         probs = scratch(B * hq * plane * es);
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
  auto rowsOf = [&](GpuArg keys, int64_t dim, GpuArg out) {
    each([&](int64_t b, int64_t i) {
      GemmShape gs = base(S, dim, T);
      gs.strideA = g * plane;
      gs.ldb = hkv * dim, gs.strideB = dim;
      gs.ldc = hq * dim, gs.strideC = g * dim;
      gemm(gs, at(probs, planeAt(b, i, es)), at(keys, keyAt(b, dim)),
           at(out, rowAt(b, i, dim)));
    });
  };
  // out keys = sum over the group of plane^T rows: dV = P^T dO, dK = dS^T Q.
  auto keysOf = [&](GpuArg rows, int64_t dim, GpuArg out) {
    each([&](int64_t b, int64_t i) {
      GemmShape gs = base(T, dim, S);
      gs.transA = true, gs.lda = T, gs.strideA = g * plane;
      gs.ldb = hq * dim, gs.strideB = g * dim;
      gs.ldc = hkv * dim, gs.strideC = dim, gs.beta = i > 0 ? 1.0f : 0.0f;
      gemm(gs, at(probs, planeAt(b, i, es)), at(rows, rowAt(b, i, dim)),
           at(out, keyAt(b, dim)));
    });
  };
  auto softmax = [&](GpuArg lseIn, GpuArg lseOut) {
    kernel("weft_attention_probs", static_cast<unsigned>(B * hq * S),
           {scores, probs, i32(typeCode(type)), lseIn, lseOut, i64(S), i64(T),
            i32(causal)});
  };
  planeOf(raw(q), raw(k), d, scale);
  if (!grad) {
    softmax(null(), raw(s.results[1]));
    rowsOf(raw(v), dv, raw(s.results[0]));
    return absl::OkStatus();
  }
  int64_t o = s.operands[3], dout = s.operands[5];
  softmax(raw(s.operands[4]), null()); // P again, from the saved lse.
  keysOf(raw(dout), dv, raw(s.results[2]));
  planeOf(raw(dout), raw(v), dv, 1.0f);
  GpuArg delta = scratch(B * hq * S * 4);
  kernel("weft_attention_delta", gridFor(B * hq * S),
         {raw(dout), raw(o), i32(typeCode(type)), delta, i64(B), i64(S),
          i64(hq), i64(dv)});
  kernel("weft_attention_dscores", gridFor(B * hq * plane),
         {probs, i32(typeCode(type)), scores, delta, f32(scale),
          i64(B * hq * plane), i64(T)});
  rowsOf(raw(k), d, raw(s.results[0]));
  keysOf(raw(q), d, raw(s.results[1]));
  return absl::OkStatus();
}

absl::Status Planner::crossEntropy(const StepSpec &s, bool grad) {
  int64_t logits = s.operands[0], labels = s.operands[1];
  int64_t vocab = shape(logits).back(), rows = count(labels);
  int64_t ignore = attrI(s, "ignore_index", -100);
  absl::StatusOr<VocabBlock> block = vocabBlock(s, vocab);
  if (!block.ok())
    return block.status();
  // bf16 logits (and gradient) are read and written as stored.
  bool bf16 = bf16CrossEntropy(s);
  GpuArg logitsArg = bf16 ? raw(logits) : wide(logits);
  // stats = [row max; sum of exponentials; target logit] (see ops.cu).
  GpuArg stats = scratch(rows * 3 * 4), total = scratch(8);
  GpuArg error = buffer(GpuBuffer::Kind::Error, 0);
  auto rowsKernel = [&](int mode) {
    kernel("weft_cross_entropy_rows", static_cast<unsigned>(rows),
           {logitsArg, i32(bf16), raw(labels), stats, i64(rows), i64(vocab),
            i64(block->offset), i64(block->total), i64(ignore), i32(mode),
            error, i32(current)});
  };
  if (block->axes.empty()) {
    rowsKernel(2);
  } else { // Megatron's vocabulary-parallel cross-entropy.
    rowsKernel(0);
    communicate("all_reduce_max", block->axes, stats, stats, rows);
    rowsKernel(1);
    GpuArg sums = at(stats, rows * 4);
    communicate("all_reduce", block->axes, sums, sums, 2 * rows);
  }
  kernel("weft_cross_entropy_total", 1,
         {stats, raw(labels), grad ? null() : wide(s.results[0]), total,
          i64(rows), i64(ignore)});
  if (grad)
    kernel("weft_cross_entropy_grad", gridFor(rows * vocab),
           {logitsArg, i32(bf16), raw(labels), stats, wide(s.operands[2]),
            total, bf16 ? raw(s.results[0]) : wide(s.results[0]), i64(rows),
            i64(vocab), i64(block->offset), i64(ignore)});
  return absl::OkStatus();
}

absl::Status Planner::norm(const StepSpec &s, bool rms) {
  int64_t x = s.operands[0];
  int64_t dim = shape(x).back(), rows = count(x) / dim;
  // All bf16 (a bf16 model's): read and written as stored.
  bool bf16 = allBf16NormGrad(s);
  auto arg = [&](int64_t id) { return bf16 ? raw(id) : wide(id); };
  GpuArg stats = scratch(rows * 2 * 8);
  kernel("weft_norm_grad_rows", static_cast<unsigned>(rows),
         {arg(x), arg(s.operands[1]), arg(s.operands[2]), arg(s.results[0]),
          stats, i64(dim), i32(rms),
          f64(attrF(s, "epsilon", rms ? 1e-6 : 1e-5)), i32(bf16)});
  // The weight and bias gradients: column sums over rows, in ops.cu's two
  // passes (32 columns by a chunk of rows a block).
  int64_t columns = (dim + 31) / 32;
  int64_t chunks = partialChunks(columns, rows, kThreads / 32);
  int64_t chunk = (rows + chunks - 1) / chunks;
  GpuArg partials = scratch(chunks * dim * 16);
  GpuLaunch &sums =
      kernel("weft_norm_grad_params", static_cast<unsigned>(columns),
             {arg(x), arg(s.operands[2]), stats, partials, i64(rows), i64(dim),
              i64(chunk), i32(bf16)});
  sums.grid[1] = static_cast<unsigned>(chunks);
  kernel("weft_norm_grad_finish", gridFor(dim),
         {partials, arg(s.results[1]), rms ? null() : arg(s.results[2]),
          i64(dim), i64(chunks), i32(bf16)});
  return absl::OkStatus();
}

bool isCommStep(const std::string &op) {
  return op == "weft.all_reduce" || op == "weft.all_gather" ||
         op == "weft.reduce_scatter" || op == "weft.shard_slice";
}

absl::Status Planner::step(int64_t index, const StepSpec &s) {
  current = index;
  std::vector<std::pair<int64_t, int64_t>> ranges = arenaRanges(s);
  if (!isCommStep(s.op)) {
    size_t last = pending.size();
    for (size_t p = 0; p < pending.size(); ++p)
      for (auto [b0, e0] : pending[p].ranges)
        for (auto [b1, e1] : ranges)
          if (b0 < e1 && b1 < e0)
            last = p;
    if (last < pending.size()) { // The stream is in order: all up to it.
      sync(GpuLaunch::Kind::Wait, pending[last].event, false);
      pending.erase(pending.begin(), pending.begin() + last + 1);
    }
    return planStep(s);
  }
  int64_t fork = plan.events++, done = plan.events++;
  sync(GpuLaunch::Kind::Record, fork, false);
  sync(GpuLaunch::Kind::Wait, fork, true);
  size_t first = plan.launches.size();
  inComm = true;
  absl::Status status = planStep(s);
  inComm = false;
  for (size_t i = first; i < plan.launches.size(); ++i)
    plan.launches[i].comm = true;
  sync(GpuLaunch::Kind::Record, done, true);
  pending.push_back({done, std::move(ranges)});
  return status;
}

GpuProgramPlan Planner::finish() {
  if (!pending.empty()) // The program's end (and its assigns) waits.
    sync(GpuLaunch::Kind::Wait, pending.back().event, false);
  for (size_t i = 0; i < plan.scratchOffsets.size(); ++i)
    if (commScratch[i])
      plan.scratchOffsets[i] += plan.scratchArenaBytes;
  plan.scratchArenaBytes += commArenaBytes;
  return std::move(plan);
}

absl::Status Planner::planStep(const StepSpec &s) {
  const std::string &op = s.op;
  // Ops that read their operands as stored.
  if (op == "weft.reshape" || op == "weft.copy_to_group") {
    int64_t from = s.operands[0], to = s.results[0];
    const ValueSpec &src = value(from), &dst = value(to);
    if (src.kind != ValueSpec::Kind::Arena) {
      plan.storageOf[to] = plan.storageOf[from]; // A view, as on the CPU.
      return absl::OkStatus();
    }
    if (dst.kind == ValueSpec::Kind::Arena && dst.offset == src.offset)
      return absl::OkStatus(); // The memory plan made it a view.
    GpuLaunch l;
    l.kind = GpuLaunch::Kind::Copy;
    l.step = current;
    l.args = {raw(to), raw(from)};
    l.bytes = dst.bytes();
    plan.launches.push_back(std::move(l));
    return absl::OkStatus();
  }
  if (op == "weft.transpose" || op == "weft.broadcast" || op == "weft.slice") {
    const Shape &out = shape(s.results[0]);
    CopySource src = copySource(s, shape(s.operands[0]), out.size());
    return stridedCopy(raw(s.operands[0]), raw(s.results[0]),
                       dtypeSize(value(s.results[0]).dtype), out, src.strides,
                       src.base, stridesOf(out), 0);
  }
  if (op == "weft.concat") {
    int64_t dim = attrI(s, "dim"), offset = 0;
    const Shape &out = shape(s.results[0]);
    Shape outStrides = stridesOf(out);
    for (int64_t part : s.operands) {
      const Shape &in = shape(part);
      if (absl::Status st = stridedCopy(
              raw(part), raw(s.results[0]), dtypeSize(value(part).dtype), in,
              stridesOf(in), 0, outStrides, offset * outStrides[dim]);
          !st.ok())
        return st;
      offset += in[dim];
    }
    return absl::OkStatus();
  }
  if (op == "weft.cast") {
    int64_t x = s.operands[0], y = s.results[0];
    for (DType t : {value(x).dtype, value(y).dtype})
      if (t != DType::F32 && t != DType::BF16 && t != DType::I32)
        return absl::UnimplementedError(
            absl::StrCat("GPU casts take f32, bf16 and i32, not ",
                         std::string(dtypeName(t))));
    convert(raw(x), value(x).dtype, raw(y), value(y).dtype, count(y));
    return absl::OkStatus();
  }
  if (op == "weft.matmul")
    return matmul(s);
  if (op == "weft.matmul_epilogue")
    return matmulEpilogue(s);
  if (op == "weft.attention" || op == "weft.attention_grad")
    return attention(s, op == "weft.attention_grad");

  // Ops that compute in f32: widen narrow operands first, round results
  // after (except where the kernels keep bf16 as stored).
  auto needsCopy = [&](int64_t id, bool operand) {
    return isNarrowFloat(value(id).dtype) && !keepsStored(s, id, operand);
  };
  for (int64_t id : s.operands)
    if (needsCopy(id, /*operand=*/true))
      convert(raw(id), value(id).dtype, wide(id), DType::F32, count(id));
  absl::Status status = absl::OkStatus();
  GpuArg error = buffer(GpuBuffer::Kind::Error, 0);
  if (op == "weft.fused") {
    status = fused(s);
  } else if (op == "weft.reduce_sum" || op == "weft.reduce_mean" ||
             op == "weft.reduce_max") {
    status = reduce(s, op == "weft.reduce_sum"    ? 0
                       : op == "weft.reduce_mean" ? 1
                                                  : 2);
  } else if (op == "weft.embedding" || op == "weft.embedding_grad") {
    bool grad = op == "weft.embedding_grad";
    int64_t table = grad ? s.results[0] : s.operands[0],
            ids = grad ? s.operands[0] : s.operands[1],
            rows = grad ? s.operands[1] : s.results[0];
    absl::StatusOr<VocabBlock> block = vocabBlock(s, shape(table)[0]);
    if (!block.ok())
      return block.status();
    if (grad)
      zero(wide(table), count(table) * 4);
    GpuLaunch &gather =
        kernel("weft_embedding", gridFor(count(rows)),
               {wide(table), raw(ids), wide(rows), i64(count(ids)),
                i64(shape(table)[1]), i64(shape(table)[0]), i64(block->offset),
                i64(block->total), i32(grad), error, i32(current)});
    // It reads (or adds to) only its ids' rows of the table.
    gather.bytes = count(ids) * 4 + 2 * count(rows) * 4;
  } else if (op == "weft.layer_norm_grad" || op == "weft.rms_norm_grad") {
    status = norm(s, op == "weft.rms_norm_grad");
  } else if (op == "weft.cross_entropy" || op == "weft.cross_entropy_grad") {
    status = crossEntropy(s, op == "weft.cross_entropy_grad");
  } else if (op == "weft.softmax") {
    const Shape &sh = shape(s.operands[0]);
    int64_t dim = attrI(s, "dim");
    int64_t outer = product(sh, 0, dim), inner = product(sh, dim + 1);
    kernel("weft_softmax", gridFor(outer * inner),
           {wide(s.operands[0]), wide(s.results[0]), i64(outer), i64(sh[dim]),
            i64(inner)});
  } else if (op == "weft.rope") {
    const Shape &sh = shape(s.operands[0]);
    kernel("weft_rope", gridFor(count(s.operands[0]) / 2),
           {wide(s.operands[0]), wide(s.results[0]), i64(sh[0]), i64(sh[1]),
            i64(sh[2]), i64(sh[3]), f64(attrF(s, "theta", 10000.0)),
            f64(attrB(s, "inverse") ? -1.0 : 1.0),
            i64(attrI(s, "position_offset"))});
  } else if (op == "weft.topk" || op == "weft.topk_gating") {
    int64_t x = s.operands[0], k = attrI(s, "k"), n = shape(x).back();
    int64_t rows = count(x) / n;
    kernel("weft_topk", gridFor(rows),
           {wide(x), wide(s.results[0]), raw(s.results[1]), i64(rows), i64(n),
            i64(k), i32(op == "weft.topk_gating"), i32(attrB(s, "normalize"))});
  } else if (op == "weft.expert_dispatch" || op == "weft.expert_scatter" ||
             op == "weft.expert_combine" || op == "weft.expert_gather") {
    bool toSlots = op == "weft.expert_dispatch" || op == "weft.expert_scatter";
    bool combine = op == "weft.expert_combine";
    int64_t src = s.operands[0], ids = s.operands[combine ? 2 : 1],
            dst = s.results[0];
    const Shape &slotShape = shape(toSlots ? dst : src);
    int64_t experts = slotShape[0], capacity = slotShape[1], dim = slotShape[2],
            pairs = count(ids), k = shape(ids)[1];
    GpuArg slots = scratch(pairs * 4);
    kernel("weft_expert_slots", gridFor(experts),
           {raw(ids), slots, i64(pairs), i64(experts), i64(capacity), error,
            i32(current)});
    zero(wide(dst), count(dst) * 4);
    int mode = op == "weft.expert_dispatch"  ? 0
               : op == "weft.expert_scatter" ? 1
               : op == "weft.expert_gather"  ? 2
                                             : 3;
    kernel("weft_expert_move", gridFor((combine ? pairs / k : pairs) * dim),
           {wide(src), raw(ids), slots, combine ? wide(s.operands[1]) : null(),
            wide(dst), i64(pairs), i64(k), i64(capacity), i64(dim), i32(mode)});
  } else if (op == "weft.dropout") {
    int64_t n = count(s.results[0]);
    kernel("weft_dropout", gridFor(n),
           {wide(s.operands[0]), wide(s.results[0]), i64(n),
            f64(attrF(s, "rate")), i64(attrI(s, "seed"))});
  } else if (op == "weft.one_hot") {
    int64_t classes = shape(s.results[0]).back();
    kernel("weft_one_hot", gridFor(count(s.results[0])),
           {raw(s.operands[0]), wide(s.results[0]), i64(count(s.operands[0])),
            i64(classes)});
  } else if (isCollective(op)) {
    status = collective(s);
  } else {
    status = absl::UnimplementedError(absl::StrCat(
        "the GPU runtime has no kernel for '", op,
        "' (elementwise ops run as generated kernels: compile the bundle "
        "with weftc compile --target cuda)"));
  }
  if (!status.ok())
    return status;
  for (int64_t id : s.results)
    if (needsCopy(id, /*operand=*/false))
      convert(wide(id), DType::F32, raw(id), value(id).dtype, count(id));
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<GpuProgramPlan> planGpuProgram(const Bundle &bundle,
                                              const std::string &name,
                                              GpuPlanOptions options) {
  auto it = bundle.programs.find(name);
  if (it == bundle.programs.end())
    return absl::NotFoundError(
        absl::StrCat(bundle.path, ": no program '", name, "'"));
  Planner planner(it->second, bundle.mesh, options);
  const std::vector<StepSpec> &steps = it->second.steps;
  for (size_t i = 0; i < steps.size(); ++i)
    if (absl::Status s = planner.step(static_cast<int64_t>(i), steps[i]);
        !s.ok())
      return absl::Status(
          s.code(), absl::StrCat(bundle.path, ": program ", name, ", step ", i,
                                 " (", steps[i].op, "): ", s.message()));
  return planner.finish();
}

GpuLaunchCost launchCost(const GpuLaunch &l, const ProgramSpec &spec,
                         const GpuProgramPlan &plan) {
  GpuLaunchCost c;
  if (l.kind == GpuLaunch::Kind::Gemm) {
    const GemmShape &g = l.gemm;
    double in = static_cast<double>(dtypeSize(g.type)),
           out = static_cast<double>(dtypeSize(g.outType()));
    c.bytes = g.batch * (in * (g.m * g.k + g.k * g.n) +
                         out * g.m * g.n * (g.hasAux() ? 2 : 1));
    c.flops = g.flops();
    c.f32Gemm = g.type == DType::F32;
    return c;
  }
  if (l.kind == GpuLaunch::Kind::Zero || l.kind == GpuLaunch::Kind::Copy) {
    c.bytes = static_cast<double>(l.bytes) *
              (l.kind == GpuLaunch::Kind::Copy ? 2 : 1);
    return c;
  }
  if (l.bytes > 0) { // The planner said what a partial access touches.
    c.bytes = static_cast<double>(l.bytes);
    return c;
  }
  for (const GpuArg &a : l.args) {
    if (a.kind != GpuArg::Kind::Buffer)
      continue;
    if (a.buffer.kind == GpuBuffer::Kind::Value)
      c.bytes += static_cast<double>(spec.values[a.buffer.id].bytes());
    else if (a.buffer.kind == GpuBuffer::Kind::Scratch)
      c.bytes += static_cast<double>(plan.scratchBytes[a.buffer.id]);
  }
  return c;
}

} // namespace weft::runtime

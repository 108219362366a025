//===- SchedExecutor.cpp - run a bundle v2's programs on the CPU ----------===//
//
// Each instruction is bound once, at create, to the pointers of its buffers
// and its decoded attributes, so a run is a loop over closures. The loader
// has checked shapes, dtypes, bounds and arities; what is checked here is
// only what the CPU cannot do (non-f32 library operands, FP8, tags past
// Gloo's 32 bits).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/SchedExecutor.h"
#include "runtime/support/CounterRng.h"

#include "runtime/exec/BundleData.h"
#include "runtime/exec/CpuMath.h"
#include "runtime/exec/ParamBlocks.h"
#include "runtime/support/Epilogue.h"
#include "runtime/support/Float.h"
#include "runtime/support/Fp8Scaling.h"
#include "runtime/support/GroupedRows.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <sys/mman.h>

namespace weft::runtime {

using sched::Buffer;
using sched::Instruction;
using sched::Op;
using sched::TensorType;
using Step = std::function<absl::Status()>;

/// Zeroed bytes, page-aligned (every `align` a bundle may ask is at most a
/// page: the loader checks it). Mapped from the kernel, which hands out
/// zero pages lazily and refuses a size it cannot back: a bundle asking for
/// more memory than the machine has is an error naming what, not a crash
/// in memset.
struct SchedExecutor::Bytes {
  char *data = nullptr;
  size_t mapped = 0;

  static absl::StatusOr<std::unique_ptr<Bytes>>
  allocate(int64_t size, const std::string &what) {
    auto bytes = std::unique_ptr<Bytes>(new Bytes());
    bytes->mapped = static_cast<size_t>(std::max<int64_t>(size, 1));
    void *p = mmap(nullptr, bytes->mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      bytes->mapped = 0;
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate ", size, " bytes for ", what, " (",
                       std::strerror(errno), ")"));
    }
    bytes->data = static_cast<char *>(p);
    return bytes;
  }
  ~Bytes() {
    if (mapped)
      munmap(data, mapped);
  }
  Bytes(const Bytes &) = delete;
  Bytes &operator=(const Bytes &) = delete;

private:
  Bytes() = default;
};

/// A program bound to its storage.
struct SchedExecutor::Bound {
  const sched::Program *spec = nullptr;
  std::vector<std::unique_ptr<Bytes>> inputs;
  std::vector<char *> ptr; // Per buffer.
  std::vector<Step> steps;
  std::vector<int64_t> stepIndex; // The instruction of each step.
  /// Per instruction: the allocs whose live range ends at it (poisoning).
  std::vector<std::vector<int64_t>> deadAfter;
};

namespace {
/// Attention dropout as bound: the mask's block, and the counters a run
/// reads to draw its step's and micro-batch's mask.
struct AttentionDropout {
  double rate = 0;
  uint64_t seed = 0;
  const float *step = nullptr, *microbatch = nullptr;
  int64_t microbatches = 1;
  MaskBlock block;
  weft_attn_dropout now() const {
    return weft_attn_dropout_at(rate, static_cast<long long>(seed), step,
                                microbatch, microbatches, block.microbatchStep,
                                block.start[0], block.start[1], block.global[1],
                                block.global[2]);
  }
};

/// The signature of a generated kernel's CPU launcher (codegen/KernelSource).
using FusedKernelFn = void (*)(const float *const *in, float *const *out,
                               int64_t n);

/// `n` contiguous elements of `src` converted by `Fn` into `dst`.
template <typename Out, typename In, Out (*Fn)(In)>
void convertRow(const char *src, char *dst, int64_t n) {
  auto *in = reinterpret_cast<const In *>(src);
  auto *out = reinterpret_cast<Out *>(dst);
  for (int64_t i = 0; i < n; ++i)
    out[i] = Fn(in[i]);
}
using RowConversion = void (*)(const char *, char *, int64_t);

/// A narrow model's widening and rounding copies, f32 <-> bf16 or f16, on
/// the bits (runtime/support/Float.h), a row at a time; null for the
/// other pairs.
RowConversion rowConversion(DType from, DType to) {
  if (from == DType::BF16 && to == DType::F32)
    return convertRow<float, uint16_t, bf16Value>;
  if (from == DType::F16 && to == DType::F32)
    return convertRow<float, uint16_t, f16Value>;
  if (from == DType::F32 && to == DType::BF16)
    return convertRow<uint16_t, float, bf16Bits>;
  if (from == DType::F32 && to == DType::F16)
    return convertRow<uint16_t, float, f16Bits>;
  return nullptr;
}

/// A strided copy with a dtype conversion: `sizes` with [offset, strides...]
/// on each side, in elements.
void stridedCopy(const char *src, DType from, char *dst, DType to,
                 const std::vector<int64_t> &sizes, int64_t srcOffset,
                 const std::vector<int64_t> &srcStrides, int64_t dstOffset,
                 const std::vector<int64_t> &dstStrides) {
  int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t count = 1;
  for (int64_t s : sizes)
    count *= s;
  if (count == 0)
    return;
  size_t inW = dtypeSize(from), outW = dtypeSize(to);
  bool same = from == to;
  RowConversion convert = rowConversion(from, to);
  // The innermost dimension, contiguous on both sides, is one memcpy (of
  // one type) or one conversion loop.
  int64_t inner = 1;
  bool rows = (same || convert) && rank > 0 && srcStrides[rank - 1] == 1 &&
              dstStrides[rank - 1] == 1;
  if (rows)
    inner = sizes[rank - 1];
  int64_t outerRank = rows ? rank - 1 : rank;
  std::vector<int64_t> index(outerRank, 0);
  int64_t si = srcOffset, di = dstOffset;
  for (int64_t done = 0; done < count; done += inner) {
    if (rows && convert) {
      convert(src + si * inW, dst + di * outW, inner);
    } else if (rows) {
      std::memcpy(dst + di * outW, src + si * inW, inner * inW);
    } else if (same) {
      std::memcpy(dst + di * outW, src + si * inW, inW);
    } else {
      double v =
          decode(reinterpret_cast<const uint8_t *>(src) + si * inW, from);
      encode(v, to, reinterpret_cast<uint8_t *>(dst) + di * outW);
    }
    for (int64_t d = outerRank - 1; d >= 0; --d) {
      si += srcStrides[d];
      di += dstStrides[d];
      if (++index[d] < sizes[d])
        break;
      si -= srcStrides[d] * sizes[d];
      di -= dstStrides[d] * sizes[d];
      index[d] = 0;
    }
  }
}

/// The f32 values of an FP8 GEMM operand [rows, k] (rows `ld` apart; what
/// lies past the matrix is not read) into `to`, each element times its
/// block's scale (Fp8Scaling.h's layout for `mode`); a per-tensor scale
/// only with `scaleTensor` (a GEMM may apply it to the product instead).
void widenFp8(std::vector<float> &to, const uint8_t *codes, DType format,
              int mode, const float *scale, int64_t rows, int64_t k, int64_t ld,
              bool scaleTensor) {
  for (size_t e = 0; e < to.size(); ++e)
    to[e] = fp8Value(codes[e], format);
  if (mode == WEFT_FP8_SCALE_TENSOR && !scaleTensor)
    return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c)
      to[r * ld + c] *= scale[weft_fp8_scale_index(mode, r, c, rows, k)];
}

/// The f32 values [n, cols] of an expert weight gradient's FP8 operand
/// `codes` [cols, n] (sched.fp8_group_cast's: expert-major) into `to`, in
/// the same order, each times its tile's scale (`scale` [T, cols], tiles of
/// `tileRows` of the rows of expert e, `counts[e]` from `firsts[e]`); rows
/// after the experts' are zero.
void widenGroupFp8(std::vector<float> &to, const uint8_t *codes, DType format,
                   const float *scale, const std::vector<long> &firsts,
                   const std::vector<int32_t> &counts, int64_t tileRows,
                   int64_t n, int64_t cols) {
  std::fill(to.begin(), to.end(), 0.0f);
  for (size_t e = 0; e < counts.size(); ++e)
    for (int64_t v = 0; v < counts[e]; ++v) {
      int64_t row = firsts[e] + v,
              tile = weft_fp8_expert_tile(firsts[e], e, v, tileRows);
      for (int64_t c = 0; c < cols; ++c)
        to[row * cols + c] =
            fp8Value(codes[c * n + row], format) * scale[tile * cols + c];
    }
}
} // namespace

SchedExecutor::~SchedExecutor() {
  programs_.clear(); // Steps call into the library: drop them first.
  if (library_)
    dlclose(library_);
}

absl::StatusOr<std::unique_ptr<SchedExecutor>>
SchedExecutor::create(sched::SchedBundle bundle, Options options) {
  std::unique_ptr<SchedExecutor> ex(new SchedExecutor());
  ex->bundle_ = std::move(bundle);
  ex->options_ = options;
  ex->mesh_ = meshSpecOf(ex->bundle_);
  const sched::SchedBundle &b = ex->bundle_;
  ex->mine_ = programsOfRank(b, ex->rank());
  for (const sched::Param &p : b.params) {
    absl::StatusOr<std::unique_ptr<Bytes>> bytes = Bytes::allocate(
        p.type.bytes(), absl::StrCat("parameter '", p.name, "'"));
    if (!bytes.ok())
      return bytes.status();
    ex->params_.push_back(std::move(*bytes));
  }
  bool gpu = options.cuda || options.makeGpu;
  if (gpu && options.checkFinite)
    return absl::UnimplementedError(
        "checking every instruction's values for NaN and infinity "
        "(--check-finite) runs on the CPU only: run the bundle there");
  if (!gpu)
    for (const sched::Constant &c : b.constants) {
      std::vector<uint8_t> bytes = constantBytes(c);
      absl::StatusOr<std::unique_ptr<Bytes>> stored = Bytes::allocate(
          c.type.bytes(), absl::StrCat("constant '", c.name, "'"));
      if (!stored.ok())
        return stored.status();
      std::memcpy((*stored)->data, bytes.data(), bytes.size());
      ex->constants_.push_back(std::move(*stored));
    }
  // The loader has checked the file is the bundle's own (its hash).
  if (b.kernels.cpu && !gpu) {
    std::string path = b.dir + "/" + b.kernels.cpu->file;
    ex->library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!ex->library_)
      return absl::NotFoundError(absl::StrCat(
          path, ": cannot load the bundle's kernels: ", dlerror()));
  }
  if (ex->mesh_.size() > 1) {
    if (!options.comm)
      return absl::FailedPreconditionError(
          absl::StrCat(b.dir, ": the bundle is placed on ", ex->mesh_.size(),
                       " ranks; run it with weft-run --nproc ",
                       ex->mesh_.size(), " (or under torchrun)"));
    if (absl::Status s =
            options.comm->setMesh(ex->mesh_, communicationGroups(b));
        !s.ok())
      return s;
  }
  if (gpu) {
    // The GPU runs every program; the host keeps the parameters.
    GpuBackend::Options g;
    g.graphs = options.cudaGraphs;
    if (options.comm) { // A placed bundle: NCCL, and this rank's GPU.
      g.comm = options.comm;
      g.rank = options.comm->rank();
      g.deviceOrdinal = static_cast<int>(options.comm->localRank());
    }
    absl::StatusOr<std::unique_ptr<GpuBackend>> backend =
        options.makeGpu ? options.makeGpu(ex->bundle_, g)
                        : GpuBackend::create(ex->bundle_, g);
    if (!backend.ok())
      return backend.status();
    ex->gpu_ = std::move(*backend);
    return ex;
  }
  // One arena for the rank's programs, the largest's (see arenaHolder_).
  const sched::Program *largest = nullptr;
  for (size_t i = 0; i < b.programs.size(); ++i)
    if (ex->mine_[i] && (!largest || b.programs[i].arena > largest->arena))
      largest = &b.programs[i];
  absl::StatusOr<std::unique_ptr<Bytes>> shared =
      Bytes::allocate(largest ? largest->arena : 0,
                      largest ? absl::StrCat("the programs' arena (program '",
                                             largest->name, "''s, the largest)")
                              : "the programs' arena");
  if (!shared.ok())
    return shared.status();
  ex->arena_ = std::move(*shared);
  ex->arenaBytes_ = largest ? largest->arena : 0;
  for (size_t i = 0; i < b.programs.size(); ++i)
    if (ex->mine_[i])
      if (absl::Status s = ex->bindProgram(b.programs[i]); !s.ok())
        return s;
  return ex;
}

int64_t SchedExecutor::arenaBytes() const { return arenaBytes_; }

absl::Status SchedExecutor::checkRunnable(const sched::Program &p) const {
  if (mine_[&p - bundle_.programs.data()])
    return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("program '", p.name, "' is another pipeline rank's; rank ",
                   rank(), " runs (and holds memory for) its own only"));
}

std::string SchedExecutor::device() const {
  return gpu_ ? gpu_->describe() : "cpu";
}

absl::Status SchedExecutor::syncHost() const {
  if (!gpu_ || !hostStale_)
    return absl::OkStatus();
  for (size_t k = 0; k < params_.size(); ++k)
    if (absl::Status s = gpu_->downloadParam(k, params_[k]->data); !s.ok())
      return s;
  hostStale_ = false; // Only once every parameter came back.
  return absl::OkStatus();
}

absl::Status SchedExecutor::bindProgram(const sched::Program &program) {
  auto bound = std::make_unique<Bound>();
  bound->spec = &program;
  for (const sched::ProgramInput &in : program.inputs) {
    absl::StatusOr<std::unique_ptr<Bytes>> input =
        Bytes::allocate(in.type.bytes(), absl::StrCat("an input of program '",
                                                      program.name, "'"));
    if (!input.ok())
      return input.status();
    bound->inputs.push_back(std::move(*input));
  }
  for (const Buffer &buf : program.buffers) {
    char *p = nullptr;
    switch (buf.kind) {
    case Buffer::Kind::Input:
      p = bound->inputs[buf.index]->data;
      break;
    case Buffer::Kind::Param:
      p = params_[bundle_.param(buf.name) - bundle_.params.data()]->data;
      break;
    case Buffer::Kind::Constant:
      p = constants_[bundle_.constant(buf.name) - bundle_.constants.data()]
              ->data;
      break;
    case Buffer::Kind::Alloc:
      p = arena_->data + buf.offset;
      break;
    case Buffer::Kind::View:
      p = bound->ptr[buf.of] + buf.offset;
      break;
    }
    bound->ptr.push_back(p);
  }
  bound->deadAfter.resize(program.instructions.size());
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const Buffer &buf = program.buffers[id];
    // An alloc live to the end is read after the program (an output).
    if (buf.kind == Buffer::Kind::Alloc &&
        buf.last < static_cast<int64_t>(program.instructions.size()))
      bound->deadAfter[buf.last].push_back(static_cast<int64_t>(id));
  }
  for (int64_t i = 0; i < static_cast<int64_t>(program.instructions.size());
       ++i) {
    absl::StatusOr<Step> step = bindInstruction(program, *bound, i);
    if (!step.ok())
      return absl::Status(
          step.status().code(),
          absl::StrCat(bundle_.dir, ": program ", program.name,
                       ", instruction ", i, " (",
                       sched::opName(program.instructions[i].op),
                       "): ", step.status().message()));
    if (*step) { // Record and wait bind to nothing.
      bound->steps.push_back(std::move(*step));
      bound->stepIndex.push_back(i);
    }
  }
  programs_[program.name] = std::move(bound);
  return absl::OkStatus();
}

absl::StatusOr<Step>
SchedExecutor::bindInstruction(const sched::Program &program,
                               const Bound &bound, int64_t index) {
  const Instruction &ins = program.instructions[index];
  const std::vector<int64_t> &ops = ins.operands;
  auto type = [&](size_t i) -> const TensorType & {
    return program.buffers[ops[i]].type;
  };
  auto f = [&](size_t i) {
    return reinterpret_cast<float *>(bound.ptr[ops[i]]);
  };
  auto i32 = [&](size_t i) {
    return reinterpret_cast<int32_t *>(bound.ptr[ops[i]]);
  };
  // Library kernels and GEMMs compute on f32 (the compiler inserted copies
  // around narrow values) with i32 ids; say so rather than misread bytes.
  auto need = [&](size_t i, DType want) -> absl::Status {
    if (type(i).dtype == want)
      return absl::OkStatus();
    return absl::UnimplementedError(absl::StrCat(
        "operand ", i, " is ", sched::dtypeText(type(i).dtype),
        "; the CPU runtime takes ", sched::dtypeText(want),
        " here (a bundle compiled with --target cuda keeps it as stored for "
        "the GPU: run it with --device cuda, or compile it for the CPU)"));
  };
  auto needAll = [&](std::initializer_list<std::pair<size_t, DType>> list) {
    for (auto [i, want] : list)
      if (absl::Status s = need(i, want); !s.ok())
        return s;
    return absl::OkStatus();
  };
  constexpr DType F = DType::F32, I = DType::I32;
  // A vocabulary block along `axes`: this rank's part of `local` rows.
  auto vocab = [&](const std::vector<std::string> &axes, int64_t local,
                   bool combine) -> absl::StatusOr<cpu::VocabRange> {
    cpu::VocabRange block;
    if (axes.empty())
      return block;
    block.offset = local * mesh_.groupRank(rank(), axes);
    block.total = local * mesh_.groupSize(axes);
    if (combine && mesh_.groupSize(axes) > 1) {
      Communicator *comm = options_.comm;
      if (!comm)
        return absl::FailedPreconditionError(
            "a vocabulary-parallel instruction needs a multi-rank job");
      block.combine = [comm, axes](float *data, size_t count, bool max) {
        return comm->allReduce(axes, data, count, max);
      };
    } else if (combine) {
      block.combine = [](float *, size_t, bool) { return absl::OkStatus(); };
    }
    return block;
  };
  const char *what = sched::opName(ins.op);

  switch (ins.op) {
  case Op::Launch: {
    const auto &a = ins.as<sched::LaunchAttrs>();
    for (size_t i = 0; i < ops.size(); ++i)
      if (absl::Status s = need(i, F); !s.ok())
        return s;
    auto fn = reinterpret_cast<FusedKernelFn>(
        library_ ? dlsym(library_, a.kernel.c_str()) : nullptr);
    if (!fn)
      return absl::NotFoundError(absl::StrCat(
          "kernel '", a.kernel, "' is not in the bundle's CPU kernel library"));
    if (a.scalars.empty() || (a.scalars[0].type != sched::ScalarType::I64 &&
                              a.scalars[0].type != sched::ScalarType::I32))
      return absl::UnimplementedError(
          "the CPU launcher takes one integer scalar, the element count");
    std::vector<const float *> in;
    std::vector<float *> out;
    for (int64_t i = 0; i < a.inputs; ++i)
      in.push_back(f(i));
    for (int64_t i = 0; i < a.outputs; ++i)
      out.push_back(f(a.inputs + i));
    int64_t n = a.scalars[0].i;
    return Step([=] {
      fn(in.data(), out.data(), n);
      return absl::OkStatus();
    });
  }
  case Op::Gemm: {
    const auto &a = ins.as<sched::GemmAttrs>();
    // FP8 operands (the loader checked both are, with scales) are read as
    // f32 copies of their codes' values, exact, and the product is scaled
    // by scale_a * scale_b before the epilogue, as cuBLASLt applies its
    // scale pointers; block scales (A [m, k], B [n, k], one matrix)
    // multiply each element before the sum instead, where cuBLASLt scales
    // each row's or 128-element block's partial sum.
    bool fp8 = a.hasScales;
    for (size_t i = fp8 ? 2 : 0; i < ops.size(); ++i)
      if (absl::Status s = need(i, F); !s.ok())
        return s;
    size_t next = 3;
    const float *bias = a.hasBias ? f(next++) : nullptr;
    float *aux = a.hasAux ? f(next++) : nullptr;
    const float *A = f(0), *B = f(1);
    float *C = f(2);
    struct Fp8Operands {
      const uint8_t *codesA, *codesB;
      DType formatA, formatB;
      std::vector<float> a, b;
      const float *scaleA, *scaleB;
      int modeA, modeB;
    };
    std::shared_ptr<Fp8Operands> wide;
    if (fp8) {
      wide = std::make_shared<Fp8Operands>();
      wide->codesA = reinterpret_cast<const uint8_t *>(bound.ptr[ops[0]]);
      wide->codesB = reinterpret_cast<const uint8_t *>(bound.ptr[ops[1]]);
      wide->formatA = type(0).dtype, wide->formatB = type(1).dtype;
      wide->a.resize(static_cast<size_t>(type(0).numElements()));
      wide->b.resize(static_cast<size_t>(type(1).numElements()));
      wide->scaleA = f(next), wide->scaleB = f(next + 1);
      wide->modeA = a.scaleModeA, wide->modeB = a.scaleModeB;
      A = wide->a.data(), B = wide->b.data();
    }
    int64_t m = a.mnk[0], n = a.mnk[1], k = a.mnk[2];
    int64_t lda = a.ld[0], ldb = a.ld[1], ldc = a.ld[2];
    int64_t sa = a.strides[0], sb = a.strides[1], sc = a.strides[2];
    int64_t batch = a.batch;
    bool ta = a.transposeA, tb = a.transposeB, acc = a.accumulate;
    GemmEpilogue epi = epilogueOf(a.epilogue);
    bool gelu = epi == GemmEpilogue::Gelu || epi == GemmEpilogue::BiasGelu;
    bool dgelu = epi == GemmEpilogue::DGelu;
    return Step([=] {
      float alpha = 1.0f;
      if (wide) {
        widenFp8(wide->a, wide->codesA, wide->formatA, wide->modeA,
                 wide->scaleA, m, k, lda, false);
        widenFp8(wide->b, wide->codesB, wide->formatB, wide->modeB,
                 wide->scaleB, n, k, ldb, false);
        if (wide->modeA == WEFT_FP8_SCALE_TENSOR)
          alpha = *wide->scaleA * *wide->scaleB;
      }
      for (int64_t i = 0; i < batch; ++i) {
        float *c = C + i * sc;
        if (k == 0) {
          if (!acc)
            for (int64_t r = 0; r < m; ++r)
              std::fill(c + r * ldc, c + r * ldc + n, 0.0f);
        } else if (m > 0 && n > 0) {
          cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                      tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                      A + i * sa, lda, B + i * sb, ldb, acc ? 1.0f : 0.0f, c,
                      ldc);
        }
        if (epi == GemmEpilogue::None)
          continue;
        // The epilogue on each f32 sum; aux is laid out as C with ld = n.
        float *x = aux ? aux + i * m * n : nullptr;
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double kept = 0;
            float &out = c[r * ldc + j];
            out = static_cast<float>(
                epilogueElement(epi, out, bias ? bias[j] : 0.0,
                                dgelu ? x[r * n + j] : 0.0, &kept, roundToF32));
            if (gelu)
              x[r * n + j] = static_cast<float>(kept);
          }
      }
      return absl::OkStatus();
    });
  }
  case Op::Attention:
  case Op::AttentionGrad: {
    // The CPU has one algorithm (tiled, FlashAttention's): scratch unused.
    const auto &a = ins.as<sched::AttentionAttrs>();
    bool grad = ins.op == Op::AttentionGrad;
    for (size_t i = 0; i < (grad ? 9u : 5u); ++i)
      if (absl::Status s = need(i, F); !s.ok())
        return s;
    cpu::AttentionShape shape(type(0).shape, type(1).shape, type(2).shape);
    float scale = static_cast<float>(a.scale);
    sched::AttentionAttrs::Optional at = a.optionalOperands(grad);
    cpu::AttentionMask mask;
    mask.causal = a.causal;
    if (a.hasPositions) {
      mask.queryPositions = i32(at.queryPositions);
      mask.keyPositions = i32(at.keyPositions);
    }
    const float *lseGrad = nullptr;
    if (a.hasLseGrad) {
      if (absl::Status s = need(at.lseGrad, F); !s.ok())
        return s;
      lseGrad = f(at.lseGrad);
    }
    AttentionDropout dropout;
    if (a.dropout > 0) {
      for (int64_t counter : {at.step, at.microbatch})
        if (counter >= 0)
          if (absl::Status s = need(counter, F); !s.ok())
            return s;
      dropout.rate = a.dropout;
      dropout.seed = static_cast<uint64_t>(a.seed);
      dropout.step = at.step < 0 ? nullptr : f(at.step);
      dropout.microbatch = at.microbatch < 0 ? nullptr : f(at.microbatch);
      dropout.microbatches = a.block.microbatches;
      dropout.block =
          *attentionMaskBlock(mesh_, rank(), shape.batch, shape.hq, shape.s,
                              shape.t, a.block.split, a.block.microbatches);
    }
    float *entropy = nullptr;
    if (a.hasEntropy) {
      if (absl::Status s = need(at.entropy, F); !s.ok())
        return s;
      entropy = f(at.entropy);
    }
    if (!grad)
      return Step([=, q = f(0), k = f(1), v = f(2), o = f(3), lse = f(4)] {
        cpu::AttentionMask m = mask;
        m.dropout = dropout.now();
        cpu::attentionForward(shape, scale, m, q, k, v, o, lse, entropy);
        return absl::OkStatus();
      });
    return Step([=, q = f(0), k = f(1), v = f(2), o = f(3), lse = f(4),
                 dout = f(5), dq = f(6), dk = f(7), dv = f(8)] {
      cpu::AttentionMask m = mask;
      m.dropout = dropout.now();
      cpu::attentionBackward(shape, scale, m, q, k, v, o, lse, dout, lseGrad,
                             dq, dk, dv);
      return absl::OkStatus();
    });
  }
  case Op::Embedding:
  case Op::EmbeddingGrad: {
    bool grad = ins.op == Op::EmbeddingGrad;
    // embedding: table, ids, out; embedding_grad: ids, dout, dtable.
    size_t tableAt = grad ? 2 : 0, idsAt = grad ? 0 : 1, rowsAt = grad ? 1 : 2;
    if (absl::Status s = needAll({{tableAt, F}, {idsAt, I}, {rowsAt, F}});
        !s.ok())
      return s;
    int64_t vocabRows = type(tableAt).shape[0], dim = type(tableAt).shape[1];
    absl::StatusOr<cpu::VocabRange> block =
        vocab(ins.as<sched::VocabAttrs>().vocabAxes, vocabRows, false);
    if (!block.ok())
      return block.status();
    int64_t count = type(idsAt).numElements();
    return Step([=, table = f(tableAt), ids = i32(idsAt), rows = f(rowsAt),
                 block = *block] {
      return cpu::embedding(grad, table, vocabRows, dim, ids, count, rows,
                            block, what);
    });
  }
  case Op::Rope: {
    const auto &a = ins.as<sched::RopeAttrs>();
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    const int32_t *positions = a.hasPositions ? i32(2) : nullptr;
    return Step([=, x = f(0), y = f(1), shape = type(0).shape] {
      cpu::rope(x, y, shape, a.theta, a.positionOffset, a.inverse, positions);
      return absl::OkStatus();
    });
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad: {
    const auto &a = ins.as<sched::CrossEntropyAttrs>();
    bool grad = ins.op == Op::CrossEntropyGrad;
    if (absl::Status s = grad ? needAll({{0, F}, {1, I}, {2, F}, {3, F}})
                              : needAll({{0, F}, {1, I}, {2, F}});
        !s.ok())
      return s;
    int64_t v = type(0).shape.back(), rows = type(1).numElements();
    absl::StatusOr<cpu::VocabRange> block = vocab(a.vocabAxes, v, true);
    if (!block.ok())
      return block.status();
    auto scratch = std::make_shared<cpu::CrossEntropyScratch>();
    return Step([=, logits = f(0), labels = i32(1),
                 dloss = grad ? f(2) : nullptr, out = f(grad ? 3 : 2),
                 block = *block, ignore = a.ignoreIndex] {
      return cpu::crossEntropy(logits, labels, rows, v, ignore, dloss, out,
                               block, *scratch, what);
    });
  }
  case Op::Reduce: {
    const auto &a = ins.as<sched::ReduceAttrs>();
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    cpu::ReduceKind kind;
    switch (a.reduction) {
    case sched::Reduction::Sum:
      kind = cpu::ReduceKind::Sum;
      break;
    case sched::Reduction::Mean:
      kind = cpu::ReduceKind::Mean;
      break;
    case sched::Reduction::Max:
      kind = cpu::ReduceKind::Max;
      break;
    case sched::Reduction::None:
      return absl::InvalidArgumentError("a reduce needs a reduction");
    }
    auto plan =
        std::make_shared<const cpu::ReducePlan>(type(0).shape, a.dims, kind);
    return Step([=, x = f(0), y = f(1)] {
      plan->run(x, y);
      return absl::OkStatus();
    });
  }
  case Op::Softmax: {
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    return Step([=, x = f(0), y = f(1), shape = type(0).shape,
                 dim = ins.as<sched::SoftmaxAttrs>().dim] {
      cpu::softmax(x, y, shape, dim);
      return absl::OkStatus();
    });
  }
  case Op::Dropout: {
    const auto &a = ins.as<sched::DropoutAttrs>();
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    if (a.hasStep)
      if (absl::Status s = need(2, F); !s.ok())
        return s;
    if (a.block.hasMicrobatch)
      if (absl::Status s = need(2 + a.hasStep, F); !s.ok())
        return s;
    size_t at = 2 + a.hasStep + a.block.hasMicrobatch; // positions
    if (a.hasPositions)
      if (absl::Status s = need(at, I); !s.ok())
        return s;
    std::optional<MaskBlock> block =
        maskBlock(mesh_, rank(), type(0).shape, a.block.split,
                  a.block.microbatches, a.hasPositions);
    if (!block)
      return absl::UnimplementedError(
          "splits more than four dimensions of its input (a dropout mask's "
          "index takes four)");
    return Step(
        [=, x = f(0), y = f(1), step = a.hasStep ? f(2) : nullptr,
         microbatch = a.block.hasMicrobatch ? f(2 + a.hasStep) : nullptr,
         positions = a.hasPositions ? i32(at) : nullptr,
         seed = static_cast<uint64_t>(a.seed), b = *block] {
          uint64_t stream = step ? weft_dropout_stream(seed, *step) : seed;
          long long start[4] = {b.start[0], b.start[1], b.start[2], b.start[3]};
          if (microbatch)
            start[b.microbatchDim] +=
                weft_microbatch(*microbatch, a.block.microbatches) *
                b.microbatchStep;
          cpu::dropout(x, y, a.rate, stream, b.local, start, b.global,
                       positions, b.positionsDim);
          return absl::OkStatus();
        });
  }
  case Op::Fp8Amax:
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    return Step([=, x = f(0), amax = f(1), shape = type(0).shape,
                 grid = type(1).shape] {
      cpu::fp8Amax(x, amax, shape, grid);
      return absl::OkStatus();
    });
  case Op::Fp8Quantize: {
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    if (absl::Status s = needAll({{0, F}, {1, F}, {2, F}}); !s.ok())
      return s;
    return Step([=, x = f(0), amax = f(1), y = f(2), shape = type(0).shape,
                 grid = type(1).shape] {
      cpu::fp8Quantize(x, amax, y, shape, grid, a.e4m3, a.pow2);
      return absl::OkStatus();
    });
  }
  case Op::Fp8Encode:
  case Op::Fp8Decode: {
    bool encode = ins.op == Op::Fp8Encode,
         pow2 = ins.as<sched::Fp8QuantizeAttrs>().pow2;
    size_t values = encode ? 0 : 2, codes = encode ? 2 : 0;
    if (absl::Status s = needAll({{values, F}, {1, F}}); !s.ok())
      return s;
    bool e4m3 = type(codes).dtype == DType::F8E4M3FN;
    return Step([=, x = f(values), amax = f(1),
                 bytes = reinterpret_cast<uint8_t *>(bound.ptr[ops[codes]]),
                 shape = type(0).shape, grid = type(1).shape] {
      if (encode)
        cpu::fp8Encode(x, amax, bytes, shape, grid, e4m3, pow2);
      else
        cpu::fp8Decode(bytes, amax, x, shape, grid, e4m3, pow2);
      return absl::OkStatus();
    });
  }
  case Op::Fp8Cast: {
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    if (absl::Status s = needAll({{0, F}, {1, F}, {3, F}}); !s.ok())
      return s;
    sched::Fp8CastGeometry g =
        sched::fp8CastGeometry(type(0).shape, type(1).shape);
    bool e4m3 = type(2).dtype == DType::F8E4M3FN;
    return Step([=, x = f(0), amax = f(1),
                 codes = reinterpret_cast<uint8_t *>(bound.ptr[ops[2]]),
                 scaleInv = f(3), n = type(0).numElements()] {
      for (int64_t i = 0; i < n; ++i)
        weft_fp8_cast_element(x[i], i, amax, codes, scaleInv, g.batch, g.rows,
                              g.cols, a.transpose, e4m3, a.pow2, a.scaleMode,
                              g.blockRows, g.blockCols);
      return absl::OkStatus();
    });
  }
  case Op::Fp8ScaleInv: {
    const auto &a = ins.as<sched::Fp8QuantizeAttrs>();
    if (absl::Status s = needAll({{1, F}, {2, F}}); !s.ok())
      return s;
    // The codes as fp8_cast's input.
    sched::Fp8CastGeometry g =
        sched::fp8CastGeometry(type(0).shape, type(1).shape);
    bool e4m3 = type(0).dtype == DType::F8E4M3FN;
    return Step(
        [=, amax = f(1), scaleInv = f(2), blocks = type(1).numElements()] {
          for (int64_t blk = 0; blk < blocks; ++blk)
            weft_fp8_block_scale_inv(blk, amax, scaleInv, g.batch, g.rows,
                                     g.cols, a.transpose, e4m3, a.pow2,
                                     a.scaleMode, g.blockRows, g.blockCols);
          return absl::OkStatus();
        });
  }
  case Op::LayerNormGrad:
  case Op::RmsNormGrad: {
    bool rms = ins.op == Op::RmsNormGrad;
    for (size_t i = 0; i < (rms ? 5u : 6u); ++i)
      if (absl::Status s = need(i, F); !s.ok())
        return s;
    int64_t dim = type(0).shape.back(), rows = type(0).numElements() / dim;
    return Step([=, x = f(0), w = f(1), dy = f(2), dx = f(3), dw = f(4),
                 db = rms ? nullptr : f(5),
                 eps = ins.as<sched::NormGradAttrs>().epsilon] {
      cpu::normBackward(x, w, dy, dx, dw, db, rows, dim, rms, eps);
      return absl::OkStatus();
    });
  }
  case Op::OneHot: {
    if (absl::Status s = needAll({{0, I}, {1, F}}); !s.ok())
      return s;
    return Step([=, ids = i32(0), y = f(1), n = type(0).numElements(),
                 classes = type(1).shape.back()] {
      cpu::oneHot(ids, n, classes, y);
      return absl::OkStatus();
    });
  }
  case Op::TopK:
  case Op::TopKGating: {
    bool gating = ins.op == Op::TopKGating;
    int64_t k = gating ? ins.as<sched::TopKGatingAttrs>().k
                       : ins.as<sched::TopKAttrs>().k;
    bool normalize = gating && ins.as<sched::TopKGatingAttrs>().normalize;
    if (absl::Status s = needAll({{0, F}, {1, F}, {2, I}}); !s.ok())
      return s;
    int64_t n = type(0).shape.back(), rows = type(0).numElements() / n;
    return Step([=, x = f(0), values = f(1), ids = i32(2)] {
      cpu::topk(x, rows, n, k, gating, normalize, values, ids);
      return absl::OkStatus();
    });
  }
  case Op::ExpertRoute: {
    const auto &a = ins.as<sched::ExpertRouteAttrs>();
    if (absl::Status s = needAll({{0, I}, {1, I}, {2, I}}); !s.ok())
      return s;
    int64_t groupSize = a.tokenAxes.empty() ? 1 : mesh_.groupSize(a.tokenAxes);
    int64_t groupRank =
        a.tokenAxes.empty() ? 0 : mesh_.groupRank(rank(), a.tokenAxes);
    Communicator *comm = options_.comm;
    if (groupSize > 1 && !comm)
      return absl::FailedPreconditionError(
          "a partitioned expert_route needs a multi-rank job");
    cpu::GatherCounts gather = [comm, axes = a.tokenAxes](const int32_t *mine,
                                                          int32_t *all,
                                                          size_t n) {
      return comm->allGather(axes, mine, all, n);
    };
    int64_t *routed =
        routed_.emplace_back(type(2).numElements(), int64_t(0)).data();
    return Step([=, ids = i32(0), positions = i32(1), counts = i32(2),
                 tokens = type(0).shape[0], k = type(0).shape[1],
                 experts = type(2).numElements(), capacity = a.capacity] {
      return cpu::expertRoute(ids, tokens, k, experts, capacity, groupSize,
                              groupRank, gather, positions, counts, routed,
                              what);
    });
  }
  case Op::ExpertDispatch:
  case Op::ExpertScatter:
  case Op::ExpertCombine:
  case Op::ExpertGather: {
    // dispatch/scatter: source, positions, rows; combine: rows, weights,
    // positions, out; gather: rows, positions, pairs.
    bool combine = ins.op == Op::ExpertCombine;
    bool toRows = ins.op == Op::ExpertDispatch || ins.op == Op::ExpertScatter;
    size_t posAt = combine ? 2 : 1, outAt = combine ? 3 : 2;
    if (absl::Status s = needAll({{0, F}, {posAt, I}, {outAt, F}}); !s.ok())
      return s;
    if (combine)
      if (absl::Status s = need(1, F); !s.ok())
        return s;
    cpu::ExpertMove move =
        ins.op == Op::ExpertDispatch  ? cpu::ExpertMove::Dispatch
        : ins.op == Op::ExpertScatter ? cpu::ExpertMove::Scatter
        : combine                     ? cpu::ExpertMove::Combine
                                      : cpu::ExpertMove::Gather;
    const std::vector<int64_t> &rows =
        toRows ? type(outAt).shape : type(0).shape;
    int64_t pairs = type(posAt).numElements(), k = type(posAt).shape[1];
    return Step([=, src = f(0), pos = i32(posAt),
                 weights = combine ? f(1) : nullptr, dst = f(outAt),
                 dstSize = type(outAt).numElements(), n = rows[0],
                 dim = rows[1]] {
      return cpu::expertMove(move, src, pos, pairs, k, weights, dst, dstSize, n,
                             dim, what);
    });
  }
  case Op::GroupedMatmul: {
    // FP8 codes (the loader checked their scales) are read as f32 copies of
    // their values times their scales (1 / s, so exactly the dequantized
    // values q / s only for MXFP8's powers of two; an ulp from them now and
    // then otherwise): the input [N, K] and the weight [E * M, K] each a
    // matrix of its mode's blocks.
    const auto &a = ins.as<sched::GroupedMatmulAttrs>();
    bool fp8 = a.hasScales;
    for (size_t i = fp8 ? 2 : 0; i < ops.size(); ++i)
      if (absl::Status s = need(i, i == 2 ? I : F); !s.ok())
        return s;
    bool t = a.transposeRhs;
    const std::vector<int64_t> &w = type(1).shape;
    int64_t n = type(0).shape[0], kDim = type(0).shape[1];
    std::shared_ptr<std::vector<float>> wideX, wideW;
    if (fp8) {
      wideX = std::make_shared<std::vector<float>>(type(0).numElements());
      wideW = std::make_shared<std::vector<float>>(type(1).numElements());
    }
    return Step([=, x = bound.ptr[ops[0]], weight = bound.ptr[ops[1]],
                 sizes = i32(2), out = f(3), groups = type(2).numElements(),
                 formatX = type(0).dtype, formatW = type(1).dtype,
                 scaleX = fp8 ? f(4) : nullptr, scaleW = fp8 ? f(5) : nullptr] {
      const float *xs = reinterpret_cast<const float *>(x),
                  *ws = reinterpret_cast<const float *>(weight);
      if (fp8) {
        widenFp8(*wideX, reinterpret_cast<const uint8_t *>(x), formatX,
                 a.scaleModeInput, scaleX, n, kDim, kDim, true);
        widenFp8(*wideW, reinterpret_cast<const uint8_t *>(weight), formatW,
                 a.scaleModeWeight, scaleW, w[0] * w[1], kDim, kDim, true);
        xs = wideX->data(), ws = wideW->data();
      }
      return cpu::groupedMatmul(xs, ws, sizes, groups, w[0], n, kDim,
                                w[t ? 1 : 2], t, out, what);
    });
  }
  case Op::GroupedMatmulWgrad: {
    // FP8 codes [P, N] and [Q, N] (the loader checked their scales) are
    // read as f32 copies [N, P] and [N, Q] of their values times their
    // tiles' scales.
    const auto &a = ins.as<sched::GroupedWgradAttrs>();
    bool fp8 = a.hasScales;
    if (absl::Status s = fp8 ? needAll({{2, I}, {3, F}})
                             : needAll({{0, F}, {1, F}, {2, I}, {3, F}});
        !s.ok())
      return s;
    int64_t n = type(0).shape[fp8 ? 1 : 0], p = type(0).shape[fp8 ? 0 : 1],
            q = type(1).shape[fp8 ? 0 : 1];
    std::shared_ptr<std::vector<float>> wideA, wideB;
    if (fp8) {
      wideA = std::make_shared<std::vector<float>>(n * p);
      wideB = std::make_shared<std::vector<float>>(n * q);
    }
    return Step([=, lhs = bound.ptr[ops[0]], rhs = bound.ptr[ops[1]],
                 sizes = i32(2), out = f(3), groups = type(2).numElements(),
                 experts = type(3).shape[0], formatA = type(0).dtype,
                 formatB = type(1).dtype, scaleA = fp8 ? f(4) : nullptr,
                 scaleB = fp8 ? f(5) : nullptr, tileRows = a.tileRows] {
      const float *as = reinterpret_cast<const float *>(lhs),
                  *bs = reinterpret_cast<const float *>(rhs);
      if (!fp8)
        return cpu::groupedMatmulWgrad(as, bs, sizes, groups, experts, n, p, q,
                                       out, what);
      // Expert-major rows: one group an expert.
      if (absl::Status s = groupStarts(sizes, groups, n, what).status();
          !s.ok())
        return s;
      std::vector<long> firsts(experts);
      std::vector<int32_t> counts(experts);
      for (int64_t e = 0; e < experts; ++e) {
        long count;
        weft_fp8_expert_span(sizes, groups, experts, n, e, &firsts[e], &count);
        counts[e] = static_cast<int32_t>(count);
      }
      widenGroupFp8(*wideA, reinterpret_cast<const uint8_t *>(lhs), formatA,
                    scaleA, firsts, counts, tileRows, n, p);
      widenGroupFp8(*wideB, reinterpret_cast<const uint8_t *>(rhs), formatB,
                    scaleB, firsts, counts, tileRows, n, q);
      return cpu::groupedMatmulWgrad(wideA->data(), wideB->data(),
                                     counts.data(), experts, experts, n, p, q,
                                     out, what);
    });
  }
  case Op::Fp8GroupQuantize:
  case Op::Fp8GroupCast: {
    const auto &a = ins.as<sched::Fp8GroupAttrs>();
    bool cast = ins.op == Op::Fp8GroupCast;
    if (absl::Status s = cast ? needAll({{0, F}, {1, I}, {3, F}})
                              : needAll({{0, F}, {1, I}, {2, F}});
        !s.ok())
      return s;
    bool e4m3 = cast ? type(2).dtype == DType::F8E4M3FN : a.e4m3;
    return Step([=, x = f(0), sizes = i32(1), out = bound.ptr[ops[2]],
                 scaleInv = cast ? f(3) : nullptr,
                 groups = type(1).numElements(), n = type(0).shape[0],
                 cols = type(0).shape[1]] {
      return cpu::fp8GroupQuantize(
          x, sizes, groups, a.experts, n, cols, a.tileRows, e4m3, a.pow2,
          cast ? nullptr : reinterpret_cast<float *>(out),
          cast ? reinterpret_cast<uint8_t *>(out) : nullptr, scaleInv, what);
    });
  }
  case Op::Copy: {
    const auto &a = ins.as<sched::CopyAttrs>();
    int64_t srcOffset = a.src[0];
    if (a.byRank)
      srcOffset += mesh_.groupRank(rank(), a.byRank->axes) * a.byRank->step;
    std::vector<int64_t> srcStrides(a.src.begin() + 1, a.src.end()),
        dstStrides(a.dst.begin() + 1, a.dst.end());
    return Step([=, from = bound.ptr[ops[0]], to = bound.ptr[ops[1]],
                 fromType = type(0).dtype, toType = type(1).dtype,
                 sizes = a.sizes, dstOffset = a.dst[0]] {
      stridedCopy(from, fromType, to, toType, sizes, srcOffset, srcStrides,
                  dstOffset, dstStrides);
      return absl::OkStatus();
    });
  }
  case Op::Fill: {
    DType dtype = type(0).dtype;
    size_t width = dtypeSize(dtype);
    std::vector<uint8_t> element =
        elementBytes(ins.as<sched::FillAttrs>().value, dtype);
    return Step([=, to = bound.ptr[ops[0]], n = type(0).numElements()] {
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(to + i * width, element.data(), width);
      return absl::OkStatus();
    });
  }
  case Op::Collective: {
    const auto &a = ins.as<sched::CollectiveAttrs>();
    std::vector<std::string> axes = a.axes;
    int64_t g = mesh_.groupSize(axes);
    Communicator *comm = options_.comm;
    if (g > 1 && !comm)
      return absl::FailedPreconditionError("a collective needs a multi-rank "
                                           "job (weft-run --nproc)");
    if (a.kind == sched::CollectiveKind::AllToAll && type(0).dtype == I) {
      // An expert route's counts, exchanged before its rows.
      if (absl::Status s = needAll({{0, I}, {1, I}}); !s.ok())
        return s;
      return Step([=, in = i32(0), out = i32(1),
                   n = type(0).numElements()]() -> absl::Status {
        if (g == 1) {
          std::memmove(out, in, n * sizeof(int32_t));
          return absl::OkStatus();
        }
        return comm->allToAll(axes, in, out, n / g);
      });
    }
    if (a.kind == sched::CollectiveKind::AllGather &&
        type(0).dtype != DType::F32) {
      // Moved as bytes: FP8 codes (weft-fp8-gather's quantized shards),
      // bf16 and f16 values as stored.
      return Step([=, in = reinterpret_cast<const uint8_t *>(bound.ptr[ops[0]]),
                   out = reinterpret_cast<uint8_t *>(bound.ptr[ops[1]]),
                   n = type(0).bytes()]() -> absl::Status {
        if (g == 1) {
          std::memmove(out, in, n);
          return absl::OkStatus();
        }
        return comm->allGather(axes, in, out, n);
      });
    }
    if (absl::Status s = needAll({{0, F}, {1, F}}); !s.ok())
      return s;
    float *in = f(0), *out = f(1);
    int64_t n = type(0).numElements(), outN = type(1).numElements();
    bool max = a.reduction == sched::Reduction::Max;
    float scale = a.reduction == sched::Reduction::Mean
                      ? 1.0f / static_cast<float>(g)
                      : 1.0f;
    switch (a.kind) {
    case sched::CollectiveKind::AllReduce:
      return Step([=]() -> absl::Status {
        if (in != out)
          std::memmove(out, in, n * sizeof(float));
        if (g > 1)
          if (absl::Status s = comm->allReduce(axes, out, n, max); !s.ok())
            return s;
        if (scale != 1.0f)
          for (int64_t i = 0; i < n; ++i)
            out[i] = out[i] * scale;
        return absl::OkStatus();
      });
    case sched::CollectiveKind::ReduceScatter: {
      // Communicator::reduceScatter all-reduces its blocks in place: on a
      // copy, since the input is only read.
      auto blocks = std::make_shared<std::vector<float>>(n);
      int64_t me = mesh_.groupRank(rank(), axes);
      return Step([=]() -> absl::Status {
        std::memcpy(blocks->data(), in, n * sizeof(float));
        if (g > 1) {
          if (max) { // Gloo's path sums; max reduces the whole, then slices.
            if (absl::Status s = comm->allReduce(axes, blocks->data(), n, true);
                !s.ok())
              return s;
            std::memcpy(out, blocks->data() + me * outN, outN * sizeof(float));
          } else if (absl::Status s =
                         comm->reduceScatter(axes, blocks->data(), out, outN);
                     !s.ok()) {
            return s;
          }
        } else {
          std::memcpy(out, blocks->data(), outN * sizeof(float));
        }
        if (scale != 1.0f)
          for (int64_t i = 0; i < outN; ++i)
            out[i] = out[i] * scale;
        return absl::OkStatus();
      });
    }
    case sched::CollectiveKind::AllGather:
      return Step([=]() -> absl::Status {
        if (g == 1) {
          std::memmove(out, in, n * sizeof(float));
          return absl::OkStatus();
        }
        return comm->allGather(axes, in, out, n);
      });
    case sched::CollectiveKind::AllToAll:
      return Step([=]() -> absl::Status {
        if (g == 1) {
          std::memmove(out, in, n * sizeof(float));
          return absl::OkStatus();
        }
        return comm->allToAll(axes, in, out, n / g);
      });
    }
    return absl::InternalError("unknown collective kind");
  }
  case Op::RaggedAllToAll: {
    if (absl::Status s = needAll({{0, F}, {1, I}, {2, I}, {3, F}}); !s.ok())
      return s;
    std::vector<std::string> axes = ins.as<sched::RaggedAttrs>().axes;
    int64_t g = mesh_.groupSize(axes);
    Communicator *comm = options_.comm;
    if (g > 1 && !comm)
      return absl::FailedPreconditionError("a collective needs a multi-rank "
                                           "job (weft-run --nproc)");
    return Step([=, in = f(0), sends = i32(1), recvs = i32(2), out = f(3),
                 inRows = type(0).shape[0], outRows = type(3).shape[0],
                 dim = type(0).shape[1], nSend = type(1).numElements(),
                 nRecv = type(2).numElements()]() -> absl::Status {
      // Rows per member, checked against both buffers before any moves.
      auto perMember =
          [&](const int32_t *sizes, int64_t n, int64_t rows,
              const char *which) -> absl::StatusOr<std::vector<int64_t>> {
        std::vector<int64_t> counts(g, 0);
        int64_t total = 0;
        for (int64_t i = 0; i < n; ++i) {
          if (sizes[i] < 0)
            return absl::OutOfRangeError(
                absl::StrCat(what, ": ", which, " size ", sizes[i], " at ", i,
                             " is negative"));
          counts[i / (n / g)] += int64_t(sizes[i]) * dim;
          total += sizes[i];
        }
        if (total > rows)
          return absl::OutOfRangeError(
              absl::StrCat(what, ": the ", which, " sizes add up to ", total,
                           " rows, more than the ", rows, " the buffer holds"));
        return counts;
      };
      absl::StatusOr<std::vector<int64_t>> send =
          perMember(sends, nSend, inRows, "send");
      if (!send.ok())
        return send.status();
      absl::StatusOr<std::vector<int64_t>> recv =
          perMember(recvs, nRecv, outRows, "receive");
      if (!recv.ok())
        return recv.status();
      int64_t received = 0;
      for (int64_t c : *recv)
        received += c;
      std::fill(out + received, out + outRows * dim, 0.0f);
      if (g == 1) {
        if ((*send)[0] != received)
          return absl::InvalidArgumentError(
              absl::StrCat(what, ": sends ", (*send)[0],
                           " elements to itself but expects ", received));
        std::memmove(out, in, received * sizeof(float));
        return absl::OkStatus();
      }
      return comm->allToAllv(axes, in, *send, out, *recv);
    });
  }
  case Op::Send:
  case Op::Recv:
  case Op::RingShift: {
    // The loader has checked that `axis` is the mesh's and that the peer is
    // not this rank (delta is no multiple of the axis size), so a transfer
    // always crosses ranks: a placed bundle, which create runs only with a
    // communicator. Bytes move as stored, whatever the dtype.
    const auto &a = ins.as<sched::PeerAttrs>();
    std::string where = absl::StrCat("along '", a.axis, "' offset ", a.delta,
                                     " tag ", a.tag, ": ");
    Communicator *comm = options_.comm;
    if (!comm)
      return absl::FailedPreconditionError(
          absl::StrCat(where,
                       "a point-to-point transfer needs a multi-rank "
                       "job (weft-run --nproc ",
                       mesh_.size(), ")"));
    if (a.tag > std::numeric_limits<uint32_t>::max())
      return absl::UnimplementedError(absl::StrCat(
          where, "the CPU runtime's tags stop at 2^32 - 1 (Gloo's slots)"));
    int64_t peer = mesh_.neighbour(rank(), a.axis, a.delta);
    auto tag = static_cast<uint32_t>(a.tag);
    char *data = bound.ptr[ops[0]];
    auto bytes = static_cast<size_t>(type(0).bytes());
    auto located = [where](absl::Status s) {
      return s.ok() ? s
                    : absl::Status(s.code(), where + std::string(s.message()));
    };
    // A send returns once posted (Communicator::send keeps a copy), since
    // the matching receive may be in a program the peer runs much later;
    // finishSends waits for them.
    if (ins.op == Op::Send)
      return Step([=] { return located(comm->send(peer, tag, data, bytes)); });
    if (ins.op == Op::RingShift) {
      // Both at once: the send is posted, then the receive waits.
      int64_t from = mesh_.neighbour(rank(), a.axis, -a.delta);
      char *out = bound.ptr[ops[1]];
      return Step([=] {
        absl::Status s = comm->send(peer, tag, data, bytes);
        return located(s.ok() ? comm->recv(from, tag, out, bytes) : s);
      });
    }
    return Step([=] { return located(comm->recv(peer, tag, data, bytes)); });
  }
  case Op::Record:
  case Op::Wait:
    // One CPU stream runs everything in program order.
    return Step();
  }
  return absl::InternalError("unknown instruction kind");
}

absl::Status SchedExecutor::finishSends() {
  return options_.comm ? options_.comm->waitSends() : absl::OkStatus();
}

ParamFill SchedExecutor::blockOf(size_t k, std::vector<float> &wide) {
  const sched::Param &p = bundle_.params[k];
  Sharding split = p.split ? *p.split : Sharding();
  ParamInit init = ParamInit::Zeros;
  switch (p.init) {
  case sched::InitKind::Zeros:
    break;
  case sched::InitKind::Ones:
    init = ParamInit::Ones;
    break;
  case sched::InitKind::Normal:
    init = ParamInit::Normal;
    break;
  case sched::InitKind::Uniform:
    init = ParamInit::Uniform;
    break;
  }
  // f32 parameters fill in place; others through an f32 copy.
  float *data = reinterpret_cast<float *>(params_[k]->data);
  if (p.type.dtype != DType::F32) {
    wide.resize(p.type.numElements());
    data = wide.data();
  }
  // The loader requires a scale exactly for normal and uniform, the only
  // initializers that read it.
  return {p.name,
          init,
          p.scale.value_or(0.0),
          p.type.shape,
          mesh_.globalShape(p.type.shape, split),
          mesh_.blockStart(rank(), p.type.shape, split),
          data,
          p.checkpointRows.value_or(-1),
          p.checkpointShape.value_or(std::vector<int64_t>()),
          p.checkpointStack.value_or(std::string())};
}

void SchedExecutor::narrow(size_t k, const std::vector<float> &wide) {
  DType dtype = bundle_.params[k].type.dtype;
  size_t width = dtypeSize(dtype);
  for (size_t i = 0; i < wide.size(); ++i)
    encode(wide[i], dtype,
           reinterpret_cast<uint8_t *>(params_[k]->data) + i * width);
}

void SchedExecutor::initialize(uint64_t seed) {
  hostStale_ = false; // Every parameter is overwritten.
  deviceStale_ = true;
  std::vector<ParamFill> fills;
  std::vector<std::vector<float>> wide(bundle_.params.size());
  for (size_t k = 0; k < bundle_.params.size(); ++k)
    fills.push_back(blockOf(k, wide[k]));
  fillParams(seed, fills);
  for (size_t k = 0; k < bundle_.params.size(); ++k)
    narrow(k, wide[k]);
}

absl::Status SchedExecutor::load(const SafetensorsFile &file, bool requireAll) {
  if (absl::Status s = syncHost(); !s.ok()) // It may keep some as they are.
    return s;
  deviceStale_ = true;
  for (size_t k = 0; k < bundle_.params.size(); ++k) {
    const sched::Param &p = bundle_.params[k];
    std::vector<float> wide;
    absl::Status s = readBlock(file, blockOf(k, wide), p.type.dtype);
    if (absl::IsNotFound(s) && !(requireAll && !p.state))
      continue;
    if (!s.ok())
      return s;
    narrow(k, wide);
  }
  return absl::OkStatus();
}

absl::Status SchedExecutor::run(const std::string &name,
                                const std::vector<HostTensor> &inputs) {
  const sched::Program *program = bundle_.program(name);
  if (!program)
    return absl::NotFoundError(
        absl::StrCat(bundle_.dir, ": no program '", name, "'"));
  const sched::Program &spec = *program;
  if (absl::Status s = checkRunnable(spec); !s.ok())
    return s;
  if (inputs.size() != spec.inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("program ", name, " takes ", spec.inputs.size(),
                     " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType &want = spec.inputs[i].type;
    if (inputs[i].shape != want.shape || inputs[i].dtype != want.dtype)
      return absl::InvalidArgumentError(absl::StrCat(
          "program ", name, ": input ", i, " has the wrong shape or dtype"));
  }
  if (gpu_) {
    std::vector<const void *> data;
    for (const HostTensor &in : inputs)
      data.push_back(in.data);
    if (deviceStale_) {
      if (absl::Status s = syncHost(); !s.ok())
        return s;
      for (size_t k = 0; k < params_.size(); ++k)
        if (absl::Status s = gpu_->uploadParam(k, params_[k]->data); !s.ok())
          return s;
      deviceStale_ = false;
    }
    hostStale_ |= spec.writesParams;
    arenaHolder_ = &spec;
    return gpu_->run(name, data);
  }
  arenaHolder_ = &spec;
  Bound &bound = *programs_.at(name);
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(bound.inputs[i]->data, inputs[i].data,
                spec.inputs[i].type.bytes());
  size_t poisoned = 0; // Instructions whose dead allocs are poisoned.
  auto poisonUpTo = [&](size_t end) { // Instructions [poisoned, end).
    for (; poisoned < end; ++poisoned)
      for (int64_t id : bound.deadAfter[poisoned])
        std::memset(bound.ptr[id], 0xff, spec.buffers[id].type.bytes());
  };
  for (size_t s = 0; s < bound.steps.size(); ++s) {
    // What died at a record or wait (no step) before this step runs: its
    // bytes may be this step's next buffer.
    if (options_.poisonDeadBuffers)
      poisonUpTo(static_cast<size_t>(bound.stepIndex[s]));
    if (options_.checkFinite)
      if (absl::Status st = checkFinite(spec, bound, bound.stepIndex[s],
                                        /*before=*/true);
          !st.ok())
        return st;
    auto started = instructionHook_ ? std::chrono::steady_clock::now()
                                    : std::chrono::steady_clock::time_point();
    // Relaxed: only a stall report reads them, and a stale value for an
    // instant is fine there; the hot loop should pay no fence.
    currentProgram_.store(&spec, std::memory_order_relaxed);
    currentInstruction_.store(bound.stepIndex[s], std::memory_order_relaxed);
    absl::Status ran = bound.steps[s]();
    currentInstruction_.store(-1, std::memory_order_relaxed);
    currentProgram_.store(nullptr, std::memory_order_relaxed);
    if (instructionHook_)
      instructionHook_(spec, bound.stepIndex[s], started,
                       std::chrono::steady_clock::now());
    if (absl::Status st = std::move(ran); !st.ok())
      return absl::Status(
          st.code(),
          absl::StrCat("program ", name, ", instruction ", bound.stepIndex[s],
                       " (",
                       sched::opName(spec.instructions[bound.stepIndex[s]].op),
                       "): ", st.message()));
    if (options_.checkFinite)
      if (absl::Status st = checkFinite(spec, bound, bound.stepIndex[s],
                                        /*before=*/false);
          !st.ok())
        return st;
    if (options_.poisonDeadBuffers)
      poisonUpTo(static_cast<size_t>(bound.stepIndex[s]) + 1);
  }
  for (const sched::Assign &a : spec.assigns) {
    const sched::Param *p = bundle_.param(a.param);
    std::memcpy(params_[p - bundle_.params.data()]->data, bound.ptr[a.buffer],
                p->type.bytes());
  }
  return absl::OkStatus();
}

absl::Status SchedExecutor::checkFinite(const sched::Program &program,
                                        const Bound &bound, int64_t index,
                                        bool before) const {
  using Kind = sched::Buffer::Kind;
  const sched::Instruction &inst = program.instructions[index];
  size_t operands = inst.operands.size() - (inst.hasScratch ? 1 : 0);
  for (size_t j = 0; j < operands; ++j) {
    int64_t id = inst.operands[j];
    const sched::Buffer &buffer = program.buffers[id];
    bool outside = buffer.kind == Kind::Param || buffer.kind == Kind::Input ||
                   buffer.kind == Kind::Constant;
    // A param an update wrote in place is checked after it, as arena
    // results are, not before (its old value is not read there): a
    // launch's outputs, a copy's destination, a state a gather or a decode
    // filled.
    bool paramOut =
        buffer.kind == Kind::Param &&
        ((inst.op == sched::Op::Launch &&
          j >= static_cast<size_t>(inst.as<sched::LaunchAttrs>().inputs)) ||
         ((inst.op == sched::Op::Copy || inst.op == sched::Op::Collective) &&
          j == 1) ||
         (inst.op == sched::Op::Fp8Decode && j == 2));
    bool wroteParam = !before && paramOut;
    if (before && paramOut)
      continue;
    if ((outside != before && !wroteParam) ||
        !isFloatingPoint(buffer.type.dtype))
      continue;
    std::vector<float> values =
        decodeAll(bound.ptr[id], buffer.type.numElements(), buffer.type.dtype);
    // A copy writes a box of its destination; the rest holds what the
    // arena held before (stale bytes, maybe a NaN), written later.
    std::vector<bool> written;
    if (inst.op == sched::Op::Copy && j == 1 && !before) {
      const auto &a = inst.as<sched::CopyAttrs>();
      written.assign(values.size(), false);
      std::vector<int64_t> index(a.sizes.size(), 0);
      int64_t total = 1;
      for (int64_t size : a.sizes)
        total *= size;
      for (int64_t n = 0; n < total; ++n) {
        int64_t at = a.dst[0];
        for (size_t k = 0; k < index.size(); ++k)
          at += index[k] * a.dst[k + 1];
        if (at >= 0 && at < static_cast<int64_t>(written.size()))
          written[at] = true;
        for (size_t k = index.size(); k-- > 0;)
          if (++index[k] < a.sizes[k])
            break;
          else
            index[k] = 0;
      }
    }
    auto bad = values.begin();
    for (; bad != values.end(); ++bad)
      if (!std::isfinite(*bad) &&
          (written.empty() || written[bad - values.begin()]))
        break;
    if (bad == values.end())
      continue;
    std::string what =
        buffer.kind == Kind::Param      ? "parameter '" + buffer.name + "'"
        : buffer.kind == Kind::Constant ? "constant '" + buffer.name + "'"
        : buffer.kind == Kind::Input
            ? absl::StrCat("program input ", buffer.index)
            : absl::StrCat("buffer ", id);
    std::string op = sched::opName(inst.op);
    if (inst.op == sched::Op::Launch)
      op += " " + inst.as<sched::LaunchAttrs>().kernel;
    if (!inst.layer.empty())
      op += ", in " + inst.layer;
    return absl::DataLossError(absl::StrCat(
        "program ", program.name, ", instruction ", index, " (", op, ") ",
        before ? "reads" : "made", " a non-finite value: operand ", j, ", ",
        what, " [", absl::StrJoin(buffer.type.shape, ", "), "] ",
        std::string(dtypeName(buffer.type.dtype)), ", holds ", *bad,
        " at element ", bad - values.begin(),
        before ? "" : " (the first instruction that did, this step)"));
  }
  return absl::OkStatus();
}

namespace {
/// Whether buffer `id` of `p` lies in the arena: an alloc, or a view of one.
bool inArena(const sched::Program &p, int64_t id) {
  while (p.buffers[id].kind == Buffer::Kind::View)
    id = p.buffers[id].of;
  return p.buffers[id].kind == Buffer::Kind::Alloc;
}
} // namespace

absl::StatusOr<std::vector<float>>
SchedExecutor::output(const std::string &name, const std::string &out) const {
  const sched::Program *program = bundle_.program(name);
  if (!program)
    return absl::NotFoundError(absl::StrCat("no program '", name, "'"));
  if (absl::Status s = checkRunnable(*program); !s.ok())
    return s;
  for (const sched::Output &o : program->outputs)
    if (o.name == out) {
      const TensorType &t = program->buffers[o.buffer].type;
      if (inArena(*program, o.buffer) && arenaHolder_ != program)
        return absl::FailedPreconditionError(absl::StrCat(
            "program ", name, "'s output '", out, "' is gone: ",
            arenaHolder_ ? "program " + arenaHolder_->name + " ran since"
                         : "it has not run",
            ", in the arena the rank's programs share; read an output "
            "before running another program"));
      if (!gpu_)
        return decodeAll(programs_.at(name)->ptr[o.buffer], t.numElements(),
                         t.dtype);
      absl::StatusOr<std::vector<uint8_t>> bytes =
          gpu_->bufferBytes(name, o.buffer);
      if (!bytes.ok())
        return bytes.status();
      return decodeAll(bytes->data(), t.numElements(), t.dtype);
    }
  return absl::NotFoundError(
      absl::StrCat("program ", name, " has no output '", out, "'"));
}

std::vector<std::vector<int64_t>> SchedExecutor::takeRoutedPairs() {
  std::vector<std::vector<int64_t>> out(routed_.begin(), routed_.end());
  for (std::vector<int64_t> &r : routed_)
    std::fill(r.begin(), r.end(), 0);
  return out;
}

absl::StatusOr<float>
SchedExecutor::scalarOutput(const std::string &name,
                            const std::string &out) const {
  absl::StatusOr<std::vector<float>> all = output(name, out);
  if (!all.ok())
    return all.status();
  return all->empty() ? std::numeric_limits<float>::quiet_NaN() : all->front();
}

absl::StatusOr<std::vector<float>>
SchedExecutor::param(const std::string &name) const {
  const sched::Param *p = bundle_.param(name);
  if (!p)
    return absl::NotFoundError(absl::StrCat("no parameter '", name, "'"));
  if (absl::Status s = syncHost(); !s.ok())
    return s;
  return decodeAll(params_[p - bundle_.params.data()]->data,
                   p->type.numElements(), p->type.dtype);
}

absl::Status SchedExecutor::copyParamBytes(const std::string &name,
                                           std::vector<uint8_t> &into) const {
  const sched::Param *p = bundle_.param(name);
  if (!p)
    return absl::NotFoundError(absl::StrCat("no parameter '", name, "'"));
  if (absl::Status s = syncHost(); !s.ok())
    return s;
  size_t bytes = p->type.numElements() * dtypeSize(p->type.dtype);
  into.resize(bytes);
  std::memcpy(into.data(), params_[p - bundle_.params.data()]->data, bytes);
  return absl::OkStatus();
}

absl::Status SchedExecutor::setParam(const std::string &name,
                                     const std::vector<float> &values) {
  const sched::Param *p = bundle_.param(name);
  if (!p)
    return absl::NotFoundError(absl::StrCat("no parameter '", name, "'"));
  if (static_cast<int64_t>(values.size()) != p->type.numElements())
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' has ", p->type.numElements(),
                     " elements here, not ", values.size()));
  if (absl::Status s = syncHost(); !s.ok()) // The others stay as they are.
    return s;
  narrow(p - bundle_.params.data(), values);
  deviceStale_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>>
SchedExecutor::gatherParam(const std::string &name) {
  absl::StatusOr<std::vector<float>> local = param(name);
  if (!local.ok())
    return local;
  const sched::Param *p = bundle_.param(name);
  absl::StatusOr<std::vector<float>> whole =
      gatherBlocks(options_.comm, mesh_, *local, p->type.shape,
                   p->split ? *p->split : Sharding());
  if (!whole.ok() || !p->pipelineRank)
    return whole;
  // A pipeline stage's tensor: only its ranks' copy is current, which a
  // sum over pp with zeros from the others hands to every rank.
  int axis = mesh_.axisIndex("pp");
  if (axis < 0 || !options_.comm)
    return absl::FailedPreconditionError(
        absl::StrCat("parameter '", name,
                     "' belongs to a pipeline stage, but this run has no pp "
                     "axis to gather it over"));
  if (!holds(*p))
    std::fill(whole->begin(), whole->end(), 0.0f);
  if (absl::Status s =
          options_.comm->allReduce({"pp"}, whole->data(), whole->size());
      !s.ok())
    return s;
  return whole;
}

absl::StatusOr<std::vector<float>>
SchedExecutor::gatherOutput(const std::string &program,
                            const std::string &name) {
  absl::StatusOr<std::vector<float>> local = output(program, name);
  if (!local.ok())
    return local;
  const sched::Program &spec = *bundle_.program(program);
  for (const sched::Output &o : spec.outputs)
    if (o.name == name && o.split)
      return gatherBlocks(options_.comm, mesh_, *local,
                          spec.buffers[o.buffer].type.shape, *o.split);
  return local;
}

} // namespace weft::runtime

//===- EmulatedGpu.cpp - the GPU runtime's device, on the CPU -------------===//

#include "test/runtime/EmulatedGpu.h"

#include "runtime/support/Fp8Scaling.h"
#include "runtime/support/ScalarMath.h"

#include "absl/strings/str_cat.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace weft::testutil {

std::map<std::string, int> cudaKernelArity(const std::string &source) {
  std::map<std::string, int> arity;
  std::regex head(R"(__global__\s+void\s+(\w+?)(##SUFFIX)?\s*\()");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), head);
       it != std::sregex_iterator(); ++it) {
    size_t at = it->position(0) + it->length(0);
    int depth = 1, commas = 0;
    for (; at < source.size() && depth > 0; ++at) {
      char c = source[at];
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      commas += depth == 1 && c == ',';
    }
    std::string name = (*it)[1];
    arity[name] = commas + 1;
    if ((*it)[2].matched)
      arity[name + "_bf16"] = commas + 1;
  }
  return arity;
}

using Thunk = void (*)(void **);
using LaunchFn = void (*)(Thunk, void **, const unsigned *, unsigned);

struct EmulatedGpu::Kernel {
  Thunk thunk = nullptr;
  LaunchFn launch = nullptr;
  int arity = 0;
};

EmulatedGpu::EmulatedGpu() = default;

EmulatedGpu::~EmulatedGpu() {
  for (void *p : allocations)
    std::free(p);
  // The libraries' worker threads are detached and idle: leave them loaded.
}

absl::Status EmulatedGpu::load(const std::string &source,
                               const std::string &label,
                               const std::string &dir) {
  // The kernels, then a table of them for the loader below.
  std::map<std::string, int> arity = cudaKernelArity(source);
  std::ostringstream table;
  // The callback takes the caller's context: ranks as threads open their
  // devices at once, so nothing may be shared through a static.
  table << "\nextern \"C\" void weft_emulator_kernels(void *context, void "
           "(*add)(void *, const char *, void (*)(void **))) {\n";
  for (const auto &[kernel, unused] : arity)
    table << "  add(context, \"" << kernel
          << "\", [](void **a) { weft_emu_call(&" << kernel << ", a); });\n";
  table << "}\n";
  // Compiled once per source text: in the kernel cache when there is one
  // (tests set XDG_CACHE_HOME), else in `dir` (beside, not over, a bundle's
  // own kernels.so).
  std::string text = source + table.str();
  std::string where = dir;
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) {
    where = absl::StrCat(cache, "/weft/emulated");
    std::string mkdir = "mkdir -p " + where;
    if (std::system(mkdir.c_str()) != 0)
      where = dir;
  }
  // The key covers the emulation header too: a change there rebuilds.
  std::ifstream header(std::string(WEFT_SOURCE_DIR) +
                       "/test/runtime/cuda_emulation.h");
  std::stringstream emulation;
  emulation << header.rdbuf();
  std::string stem =
      absl::StrCat(where, "/emulated-", label, "-",
                   std::hash<std::string>()(emulation.str() + text));
  std::string so = stem + ".so";
  if (std::ifstream(so).good())
    return open(so, arity);
  // Written under a temporary name and renamed: parallel tests share it.
  std::string partial = absl::StrCat(stem, ".", getpid());
  std::ofstream(partial + ".cpp") << text;
  std::string command = absl::StrCat(
      WEFT_EMULATION_CXX, " -std=c++17 -O1 -w -fPIC -shared -pthread -include ",
      WEFT_SOURCE_DIR, "/test/runtime/cuda_emulation.h -I", WEFT_SOURCE_DIR,
      "/runtime/gpu/kernels -o ", partial, ".so ", partial, ".cpp > ", partial,
      ".log 2>&1");
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(partial + ".log");
    std::stringstream out;
    out << log.rdbuf();
    return absl::InternalError(
        absl::StrCat(label, ": compiling for emulation failed:\n", out.str()));
  }
  std::rename((partial + ".so").c_str(), so.c_str());
  return open(so, arity);
}

absl::Status EmulatedGpu::open(const std::string &so,
                               const std::map<std::string, int> &arity) {
  void *library = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return absl::InternalError(absl::StrCat(so, ": ", dlerror()));
  libraries.push_back(library);
  auto launch =
      reinterpret_cast<LaunchFn>(dlsym(library, "weft_emulator_launch"));
  using AddFn = void (*)(void *, const char *, Thunk);
  auto list = reinterpret_cast<void (*)(void *, AddFn)>(
      dlsym(library, "weft_emulator_kernels"));
  if (!launch || !list)
    return absl::InternalError(absl::StrCat(so, ": no emulator entry points"));
  std::vector<std::pair<std::string, Thunk>> entries;
  list(&entries, [](void *context, const char *n, Thunk t) {
    static_cast<std::vector<std::pair<std::string, Thunk>> *>(context)
        ->push_back({n, t});
  });
  for (const auto &[kernel, thunk] : entries) {
    auto found = arity.find(kernel);
    if (found == arity.end())
      return absl::InternalError(
          absl::StrCat(so, ": kernel ", kernel, " is not in the source"));
    kernels[kernel] =
        std::make_unique<Kernel>(Kernel{thunk, launch, found->second});
  }
  return absl::OkStatus();
}

absl::StatusOr<runtime::DeviceBuffer> EmulatedGpu::allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *p = std::aligned_alloc(256, rounded);
  if (!p)
    return absl::ResourceExhaustedError("out of emulated GPU memory");
  // Like cuMemAlloc, memory starts undefined: NaN bytes make reads of
  // anything never written show in the results.
  std::memset(p, 0xff, rounded);
  allocations.push_back(p);
  return runtime::DeviceBuffer{reinterpret_cast<uint64_t>(p), bytes};
}

absl::Status EmulatedGpu::copyToDevice(runtime::DeviceBuffer to,
                                       const void *from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(to.address), from, bytes);
  return absl::OkStatus();
}

absl::Status EmulatedGpu::copyToHost(void *to, runtime::DeviceBuffer from,
                                     size_t bytes) {
  std::memcpy(to, reinterpret_cast<const void *>(from.address), bytes);
  return absl::OkStatus();
}

absl::StatusOr<void *> EmulatedGpu::function(const std::string &name) {
  auto it = kernels.find(name);
  if (it == kernels.end())
    return absl::NotFoundError(
        absl::StrCat("no kernel '", name, "' in the loaded modules"));
  return it->second.get();
}

absl::StatusOr<void *> EmulatedGpu::createStream() {
  streams.push_back(std::make_unique<Stream>());
  return streams.back().get();
}

absl::StatusOr<void *> EmulatedGpu::createEvent() {
  events.push_back(std::make_unique<Event>());
  return events.back().get();
}

void EmulatedGpu::enqueue(Stream *stream, Item item) {
  if (recording) {
    recording->push_back({stream, std::move(item)});
    return;
  }
  // A record or wait counts its generation when it is queued, as CUDA
  // resolves a wait against the event's latest record at the call.
  if (item.kind == Item::Kind::Record)
    item.generation = ++item.event->queued;
  else if (item.kind == Item::Kind::Wait)
    item.generation = item.event->queued;
  if (!lazy) { // Submission order: everything runs now.
    if (item.kind == Item::Kind::Work)
      item.work();
    else if (item.kind == Item::Kind::Record)
      item.event->done = item.generation;
    return;
  }
  stream->queue.push_back(std::move(item));
  // The first stream runs on; the others wait to be needed.
  if (!streams.empty() && stream == streams.front().get())
    drain(stream);
}

bool EmulatedGpu::step(Stream *stream) {
  Item &item = stream->queue.front();
  if (item.kind == Item::Kind::Wait && item.event->done < item.generation) {
    for (const std::unique_ptr<Stream> &other : streams)
      for (const Item &queued : other->queue)
        if (queued.kind == Item::Kind::Record && queued.event == item.event &&
            queued.generation == item.generation && other.get() != stream) {
          runUntil(other.get(), item.event, item.generation);
          return true;
        }
    return false; // Recorded nowhere yet: blocked.
  }
  Item run = std::move(item);
  stream->queue.pop_front();
  if (run.kind == Item::Kind::Work)
    run.work();
  else if (run.kind == Item::Kind::Record)
    run.event->done = std::max(run.event->done, run.generation);
  return true;
}

void EmulatedGpu::runUntil(Stream *stream, Event *event, int64_t generation) {
  while (!stream->queue.empty() && event->done < generation)
    if (!step(stream))
      return;
}

void EmulatedGpu::drain(Stream *stream) {
  while (!stream->queue.empty())
    if (!step(stream))
      return; // Waits on a record not yet queued: later submissions free it.
}

absl::Status EmulatedGpu::record(void *event, void *stream) {
  enqueue(static_cast<Stream *>(stream),
          {Item::Kind::Record, Work(), static_cast<Event *>(event), 0});
  return absl::OkStatus();
}

absl::Status EmulatedGpu::wait(void *stream, void *event) {
  enqueue(static_cast<Stream *>(stream),
          {Item::Kind::Wait, Work(), static_cast<Event *>(event), 0});
  return absl::OkStatus();
}

absl::Status EmulatedGpu::submit(void *stream, Work work) {
  enqueue(static_cast<Stream *>(stream),
          {Item::Kind::Work, std::move(work), nullptr, 0});
  return absl::OkStatus();
}

absl::Status EmulatedGpu::launchAsync(void *function, const unsigned grid[3],
                                      unsigned block, void **args,
                                      void *stream) {
  auto *k = static_cast<Kernel *>(function);
  std::array<unsigned, 3> g = {grid[0], grid[1], grid[2]};
  // The argument values are read when the kernel runs, as on a GPU, where
  // a captured launch keeps its own copy; the backend's blobs outlive it.
  return submit(stream, [k, g, block, args] {
    k->launch(k->thunk, args, g.data(), block);
  });
}

absl::Status EmulatedGpu::zeroAsync(uint64_t address, size_t bytes,
                                    void *stream) {
  return submit(stream, [=] {
    std::memset(reinterpret_cast<void *>(address), 0, bytes);
  });
}

absl::Status EmulatedGpu::copyAsync(uint64_t to, uint64_t from, size_t bytes,
                                    void *stream) {
  return submit(stream, [=] {
    std::memmove(reinterpret_cast<void *>(to),
                 reinterpret_cast<const void *>(from), bytes);
  });
}

absl::Status EmulatedGpu::synchronize(void *stream) {
  if (lazy)
    drain(static_cast<Stream *>(stream));
  return absl::OkStatus();
}

absl::StatusOr<void *>
EmulatedGpu::capture(void *, const std::function<absl::Status()> &work) {
  if (refuse)
    return absl::UnimplementedError("this emulated driver captures nothing");
  graphs.push_back(std::make_unique<Graph>());
  recording = graphs.back().get();
  absl::Status s = work();
  recording = nullptr;
  if (!s.ok())
    return s;
  return graphs.back().get();
}

absl::Status EmulatedGpu::replay(void *graph, void *) {
  ++replays_;
  // Each item back onto its stream, in the order it was captured.
  for (const auto &[stream, item] : *static_cast<Graph *>(graph))
    enqueue(stream, item);
  return absl::OkStatus();
}

namespace {
double load(uint64_t base, int64_t i, runtime::DType type) {
  if (type == runtime::DType::F32)
    return reinterpret_cast<const float *>(base)[i];
  return runtime::decode(reinterpret_cast<const uint8_t *>(base) +
                             runtime::dtypeSize(type) * i,
                         type);
}
} // namespace

absl::Status HostGemm::prepare(const runtime::GemmShape &g) {
  if (g.type != runtime::DType::F32 && g.type != runtime::DType::BF16)
    return absl::UnimplementedError("HostGemm takes f32 or bf16");
  // What cuBLASLt refuses (and the epilogues the GPU runtime does not
  // hand it with FP8 operands), refused here too.
  if (g.fp8() &&
      (g.transA || !g.transB || g.epilogue != runtime::GemmEpilogue::None ||
       (g.fp8A == runtime::DType::F8E5M2 && g.fp8B == runtime::DType::F8E5M2)))
    return absl::UnimplementedError(
        "FP8 GEMMs read A [m, k] and B [n, k], not both E5M2, and take no "
        "epilogue");
  // MXFP8's 1 x 32 blocks run in Weft's own kernel, not cuBLASLt.
  if (g.fp8() && (g.scaleModeA == WEFT_FP8_SCALE_VEC32 ||
                  g.scaleModeB == WEFT_FP8_SCALE_VEC32))
    return absl::UnimplementedError("cuBLASLt here takes no 1 x 32 blocks");
  return absl::OkStatus();
}

absl::Status HostGemm::matmul(const runtime::GemmShape &shape,
                              const runtime::GemmOperands &ops, void *stream) {
  return gpu.submit(stream, [g = shape, ops] {
    using runtime::GemmEpilogue;
    runtime::DType out = g.outType();
    auto store = [&](uint64_t base, int64_t at, double value) {
      if (out == runtime::DType::F32)
        reinterpret_cast<float *>(base)[at] = static_cast<float>(value);
      else
        runtime::encode(static_cast<float>(value), out,
                        reinterpret_cast<uint8_t *>(base) + 2 * at);
    };
    // FP8 operands: their codes' values, each partial sum along k times
    // both operands' scales for it, as cuBLASLt promotes them: the whole
    // sum per tensor or row, each 128-element block's under 1 x 128 and
    // 128 x 128 blocks (A [m, k], B [n, k]: Fp8Scaling.h's layouts).
    runtime::DType typeA = g.fp8() ? g.fp8A : g.type,
                   typeB = g.fp8() ? g.fp8B : g.type;
    int64_t step = std::max<int64_t>(
        g.fp8() ? weft_fp8_scale_block_k(g.scaleModeA, g.k) : g.k, 1);
    auto scaleOf = [&](uint64_t scales, int mode, int64_t row, int64_t p,
                       int64_t rows) {
      return static_cast<double>(reinterpret_cast<const float *>(
          scales)[weft_fp8_scale_index(mode, row, p, rows, g.k)]);
    };
    for (int64_t t = 0; t < g.batch; ++t)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t first = 0; first < g.k; first += step) {
            double partial = 0;
            for (int64_t p = first; p < std::min(g.k, first + step); ++p)
              partial += load(ops.a,
                              t * g.strideA + (g.transA ? p * g.rowA() + i
                                                        : i * g.rowA() + p),
                              typeA) *
                         load(ops.b,
                              t * g.strideB + (g.transB ? j * g.rowB() + p
                                                        : p * g.rowB() + j),
                              typeB);
            if (g.fp8())
              partial *= scaleOf(ops.scaleA, g.scaleModeA, i, first, g.m) *
                         scaleOf(ops.scaleB, g.scaleModeB, j, first, g.n);
            sum += partial;
          }
          int64_t at = t * g.strideC + i * g.rowC() + j;
          // Rounded to f32 first, as cuBLASLt's f32 accumulator is; the
          // epilogue works on f32 values too.
          double value = static_cast<float>(g.alpha * sum);
          if (g.beta != 0)
            value = static_cast<float>(value + g.beta * load(ops.c, at, out));
          double aux = 0;
          value = runtime::epilogueElement(
              g.epilogue, value, g.hasBias() ? load(ops.bias, j, out) : 0.0,
              g.epilogue == GemmEpilogue::DGelu ? load(ops.aux, at, out) : 0.0,
              &aux, runtime::roundToF32);
          if (g.hasAux() && g.epilogue != GemmEpilogue::DGelu)
            store(ops.aux, at, aux);
          store(ops.c, at, value);
        }
  });
}

absl::Status
HostGemm::groupedMatmul(const std::vector<runtime::GemmProblem> &problems,
                        runtime::DeviceBuffer scratch, void *stream) {
  if (scratch.bytes < groupedScratchBytes(problems.size()))
    return absl::InternalError("grouped GEMM scratch too small");
  ++groupedCalls_;
  for (const runtime::GemmProblem &p : problems) {
    if (p.shape.type != runtime::DType::F32 || p.shape.batch != 1 ||
        p.shape.epilogue != runtime::GemmEpilogue::None)
      return absl::UnimplementedError(
          "grouped GEMMs take f32 without an epilogue");
    if (absl::Status s = matmul(p.shape, p.operands, stream); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status HostCollectives::submit(void *stream,
                                     std::function<absl::Status()> call) {
  return gpu.submit(stream, [call] {
    if (absl::Status s = call(); !s.ok()) {
      std::fprintf(stderr, "emulated collective failed: %s\n",
                   std::string(s.message()).c_str());
      std::abort();
    }
  });
}

absl::Status HostCollectives::allReduce(const std::vector<std::string> &axes,
                                        uint64_t data, size_t count, bool max,
                                        void *stream) {
  return submit(stream, [this, axes, data, count, max] {
    return comm.allReduce(axes, reinterpret_cast<float *>(data), count, max);
  });
}

absl::Status HostCollectives::allGather(const std::vector<std::string> &axes,
                                        uint64_t in, uint64_t out, size_t count,
                                        void *stream) {
  return submit(stream, [this, axes, in, out, count] {
    return comm.allGather(axes, reinterpret_cast<const float *>(in),
                          reinterpret_cast<float *>(out), count);
  });
}

absl::Status HostCollectives::allToAll(const std::vector<std::string> &axes,
                                       uint64_t in, uint64_t out, size_t count,
                                       void *stream) {
  return submit(stream, [this, axes, in, out, count] {
    return comm.allToAll(axes, reinterpret_cast<const float *>(in),
                         reinterpret_cast<float *>(out), count);
  });
}

absl::Status
HostCollectives::reduceScatter(const std::vector<std::string> &axes,
                               uint64_t in, uint64_t out, size_t count,
                               void *stream) {
  return submit(stream, [this, axes, in, out, count] {
    return comm.reduceScatter(axes, reinterpret_cast<float *>(in),
                              reinterpret_cast<float *>(out), count);
  });
}

absl::Status HostCollectives::ringShift(const std::string &axis, int64_t delta,
                                        int64_t tag, uint64_t in, uint64_t out,
                                        size_t bytes, void *stream) {
  return submit(stream, [this, axis, delta, tag, in, out, bytes] {
    const runtime::MeshSpec &mesh = comm.mesh();
    int64_t me = comm.rank();
    auto t = static_cast<uint32_t>(tag);
    if (absl::Status s = comm.send(mesh.neighbour(me, axis, delta), t,
                                   reinterpret_cast<const void *>(in), bytes);
        !s.ok())
      return s;
    return comm.recv(mesh.neighbour(me, axis, -delta), t,
                     reinterpret_cast<void *>(out), bytes);
  });
}

} // namespace weft::testutil

//===- GpuBackend.cpp - run a bundle v2's programs on a GPU ---------------===//

#include "runtime/gpu/GpuBackend.h"

#include "runtime/exec/BundleData.h"
#include "runtime/gpu/CublasLt.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/Nccl.h"
#include "runtime/gpu/Nvrtc.h"
#include "runtime/gpu/kernels/OpsAbi.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace weft::runtime {
namespace {
/// cuBLASLt's workspace; 32 MiB is what it asks for on Hopper at most.
constexpr size_t kGemmWorkspaceBytes = 32u << 20;

/// A launch with its arguments laid out as cuLaunchKernel takes them.
struct BoundLaunch {
  const GpuLaunch *launch = nullptr;
  void *function = nullptr;
  void *stream = nullptr;
  std::string blob;                // The arguments' values, each aligned.
  std::vector<size_t> offsets;     // Where each starts in blob.
  std::vector<void *> argv;        // Pointers into blob, once it stays put.
  std::vector<uint64_t> addresses; // Buffer arguments, resolved.
  GemmShape gemm;                  // The launch's, with the alignments.
  DeviceBuffer scratch;            // A GroupedGemm's, for its arguments.
};

struct ProgramState {
  const sched::Program *spec = nullptr;
  GpuProgram program;
  std::vector<uint64_t> address;    // Per buffer.
  std::vector<DeviceBuffer> inputs; // Per program input.
  DeviceBuffer error;
  std::vector<void *> events;
  /// The program's first stream, and the others its launches use, which
  /// fork from it at the start (`fork`) and join it at the end (one event
  /// each in `joins`).
  void *first = nullptr;
  std::vector<void *> sides;
  void *fork = nullptr;
  std::vector<void *> joins;
  std::vector<BoundLaunch> launches;
  /// The group sizes each HostRead brings back (GpuProgram::hostSlots).
  std::vector<std::vector<int32_t>> hostSlots;
  bool ranOnce = false;
  void *graph = nullptr;
  /// Capture failed once, or the program reads sizes back to the host:
  /// launch by launch.
  bool noGraph = false;
};

/// Devices hand out 256-byte-aligned memory; a program asking for a larger
/// alignment is given this much more arena and starts further in.
int64_t alignmentSlack(const sched::Program &p) {
  return p.align > 256 ? p.align : 0;
}

/// The largest power of two (at most 256) dividing `address`.
int64_t alignment(uint64_t address) {
  int64_t a = 256;
  while (a > 1 && address % a)
    a /= 2;
  return a;
}
} // namespace

struct GpuBackend::Impl {
  const sched::SchedBundle *bundle = nullptr;
  Options options;
  MeshSpec mesh;
  std::unique_ptr<GpuDevice> device;
  std::unique_ptr<GemmEngine> blas; // Declared after the device: freed first.
  std::unique_ptr<GpuCollectives> nccl;  // Made by create(); freed first.
  std::map<std::string, void *> streams; // By the programs' stream names.
  /// Another pipeline rank's parameters are left empty (rankHolds).
  std::vector<DeviceBuffer> params, constants;
  /// The programs this rank runs (programsOfRank), the only ones bound;
  /// they share one arena, the largest of theirs (SchedExecutor's
  /// arena_ says why that is safe).
  std::map<std::string, ProgramState> programs;
  DeviceBuffer arena;
  const ProgramState *lastRun = nullptr; // Whose values the arena holds.

  absl::StatusOr<void *> stream(const std::string &name);
  absl::Status bindProgram(const sched::Program &program, ProgramState &state);
  absl::Status bindLaunch(ProgramState &state, const GpuLaunch &launch);
  absl::Status enqueue(ProgramState &state);
  absl::Status enqueueAssigns(ProgramState &state);
  absl::Status readError(const ProgramState &state);
};

namespace {
/// Loads the bundle's generated kernels (its cubin for this GPU, else its
/// source through NVRTC) and the runtime's own (NVRTC).
absl::Status loadKernels(CudaDevice *device, const sched::SchedBundle &b) {
  if (!b.kernelDecls.empty()) {
    auto cubin = b.kernels.cuda.find(device->arch());
    if (cubin == b.kernels.cuda.end() && !b.kernels.source)
      return absl::FailedPreconditionError(absl::StrCat(
          b.dir, ": the bundle has no CUDA kernels for ", device->arch(),
          "; compile it with weftc compile --target cuda"));
    if (absl::Status s = device->loadBundleKernels(
            b.dir, cubin == b.kernels.cuda.end() ? "" : cubin->second.file,
            b.kernels.source.value_or(""));
        !s.ok())
      return s;
  }
  for (auto [source, label] :
       {std::pair{gpuOpsSource(), "ops.cu"},
        std::pair{gpuAttentionSource(), "attention.cu"}}) {
    absl::StatusOr<std::string> image =
        compileCudaSource(source, device->arch(), label);
    if (!image.ok())
      return image.status();
    if (absl::Status s = device->loadImage(*image); !s.ok())
      return s;
  }
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<void *> GpuBackend::Impl::stream(const std::string &name) {
  auto it = streams.find(name);
  if (it != streams.end())
    return it->second;
  absl::StatusOr<void *> made = device->createStream();
  if (!made.ok())
    return made.status();
  streams[name] = *made;
  return *made;
}

absl::Status GpuBackend::Impl::bindLaunch(ProgramState &state,
                                          const GpuLaunch &launch) {
  BoundLaunch bound;
  bound.launch = &launch;
  absl::StatusOr<void *> on = stream(state.spec->streams.at(launch.stream));
  if (!on.ok())
    return on.status();
  bound.stream = *on;
  for (const GpuArg &a : launch.args) {
    uint64_t address = 0;
    if (a.kind == GpuArg::Kind::Buffer)
      address = a.buffer.kind == GpuBuffer::Kind::Error
                    ? state.error.address
                    : state.address[a.buffer.id] + a.buffer.offset;
    bound.addresses.push_back(address);
  }
  if (launch.kind == GpuLaunch::Kind::Gemm) {
    // Each matrix's alignment, now that its address is known.
    bound.gemm = launch.gemm;
    bound.gemm.alignA = alignment(bound.addresses[0]);
    bound.gemm.alignB = alignment(bound.addresses[1]);
    bound.gemm.alignC = alignment(bound.addresses[2]);
    bound.gemm.alignBias = alignment(bound.addresses[3]);
    bound.gemm.alignAux = alignment(bound.addresses[4]);
    if (absl::Status s = blas->prepare(bound.gemm); !s.ok())
      return s;
  } else if (launch.kind == GpuLaunch::Kind::HostRead) {
    state.hostSlots.at(launch.slot).resize(launch.bytes / sizeof(int32_t));
  } else if (launch.kind == GpuLaunch::Kind::GroupedGemm) {
    absl::StatusOr<DeviceBuffer> scratch = device->allocate(
        GemmEngine::groupedScratchBytes(launch.grouped.groups));
    if (!scratch.ok())
      return scratch.status();
    bound.scratch = *scratch;
  } else if (launch.kind == GpuLaunch::Kind::Kernel) {
    // Weft's FP8 GEMMs (MXFP8, experts, expert weight gradients) issue
    // mma.sync over FP8 codes: FP8 tensor cores (sm_89 and up), as
    // cuBLASLt's FP8 GEMMs need.
    int arch = 0;
    if ((launch.kernel == "weft_fp8_block_gemm" ||
         launch.kernel == "weft_fp8_group_wgrad") &&
        (!absl::SimpleAtoi(absl::string_view(device->arch()).substr(3),
                           &arch) ||
         arch < 89))
      return absl::FailedPreconditionError(absl::StrCat(
          launch.kernel == "weft_fp8_group_wgrad"
              ? "an FP8 expert weight gradient on Weft's kernel "
              : "an FP8 GEMM on Weft's kernel (MXFP8's 1 x 32 blocks, or an "
                "expert layer's) ",
          "needs FP8 tensor cores (sm_89 or later); this GPU is ",
          device->arch()));
    absl::StatusOr<void *> fn = device->function(launch.kernel);
    if (!fn.ok())
      return fn.status();
    bound.function = *fn;
    // Lay the values out, each at its natural alignment.
    for (size_t i = 0; i < launch.args.size(); ++i) {
      const GpuArg &a = launch.args[i];
      size_t size = a.kind == GpuArg::Kind::I32 || a.kind == GpuArg::Kind::F32
                        ? 4
                    : a.kind == GpuArg::Kind::Bytes ? a.bytes.size()
                                                    : 8;
      size_t align = size == 4 ? 4 : 8;
      size_t at = (bound.blob.size() + align - 1) / align * align;
      bound.blob.resize(at + size);
      char *to = bound.blob.data() + at;
      switch (a.kind) {
      case GpuArg::Kind::Buffer:
      case GpuArg::Kind::Null:
        std::memcpy(to, &bound.addresses[i], 8);
        break;
      case GpuArg::Kind::I32: {
        auto v = static_cast<int32_t>(a.i);
        std::memcpy(to, &v, 4);
        break;
      }
      case GpuArg::Kind::I64:
        std::memcpy(to, &a.i, 8);
        break;
      case GpuArg::Kind::F32: {
        auto v = static_cast<float>(a.f);
        std::memcpy(to, &v, 4);
        break;
      }
      case GpuArg::Kind::F64:
        std::memcpy(to, &a.f, 8);
        break;
      case GpuArg::Kind::Bytes:
        std::memcpy(to, a.bytes.data(), size);
        break;
      }
      bound.offsets.push_back(at);
    }
  } else if (launch.kind == GpuLaunch::Kind::Collective &&
             !options.collectives) {
    return absl::FailedPreconditionError(
        "a collective needs a multi-rank job (weft-run --nproc)");
  }
  state.launches.push_back(std::move(bound));
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::bindProgram(const sched::Program &program,
                                           ProgramState &state) {
  state.spec = &program;
  absl::StatusOr<GpuProgram> launches =
      gpuProgram(*bundle, program, mesh, options.rank);
  if (!launches.ok())
    return launches.status();
  state.program = std::move(*launches);
  state.hostSlots.resize(state.program.hostSlots);
  if (state.program.hostSlots > 0 && options.graphs) {
    state.noGraph = true;
    std::fprintf(stderr,
                 "weft: program %s runs launch by launch, without a CUDA "
                 "graph: its grouped GEMMs read their group sizes back from "
                 "the device\n",
                 program.name.c_str());
  }
  uint64_t base = arena.address;
  if (alignmentSlack(program))
    base = (base + program.align - 1) / program.align * program.align;
  for (const sched::ProgramInput &in : program.inputs) {
    absl::StatusOr<DeviceBuffer> b =
        device->allocate(static_cast<size_t>(in.type.bytes()));
    if (!b.ok())
      return b.status();
    state.inputs.push_back(*b);
  }
  for (const sched::Buffer &b : program.buffers) {
    uint64_t address = 0;
    switch (b.kind) {
    case sched::Buffer::Kind::Input:
      address = state.inputs[b.index].address;
      break;
    case sched::Buffer::Kind::Param: {
      const DeviceBuffer &param =
          params[bundle->param(b.name) - bundle->params.data()];
      if (param.bytes == 0 && b.type.bytes() > 0)
        return absl::FailedPreconditionError(absl::StrCat(
            "program '", program.name, "' reads parameter '", b.name,
            "', which another pipeline rank holds, not rank ", options.rank));
      address = param.address;
      break;
    }
    case sched::Buffer::Kind::Constant:
      address = constants[bundle->constant(b.name) - bundle->constants.data()]
                    .address;
      break;
    case sched::Buffer::Kind::Alloc:
      address = base + b.offset;
      break;
    case sched::Buffer::Kind::View:
      address = state.address[b.of] + b.offset;
      break;
    }
    state.address.push_back(address);
  }
  absl::StatusOr<DeviceBuffer> error = device->allocate(4 * sizeof(int32_t));
  if (!error.ok())
    return error.status();
  state.error = *error;
  for (int64_t e = 0; e < program.events; ++e) {
    absl::StatusOr<void *> event = device->createEvent();
    if (!event.ok())
      return event.status();
    state.events.push_back(*event);
  }
  absl::StatusOr<void *> first = stream(program.streams.front());
  if (!first.ok())
    return first.status();
  state.first = *first;
  for (const GpuLaunch &launch : state.program.launches)
    if (absl::Status s = bindLaunch(state, launch); !s.ok())
      return absl::Status(
          s.code(),
          absl::StrCat(
              bundle->dir, ": program ", program.name, ", instruction ",
              launch.instruction, " (",
              sched::opName(program.instructions[launch.instruction].op),
              "): ", s.message()));
  // Pointers into the blobs only now: moving a short string moves its bytes.
  for (BoundLaunch &b : state.launches)
    for (size_t at : b.offsets)
      b.argv.push_back(b.blob.data() + at);
  // The compiler's events order the streams within the program; these make
  // every stream start after the program does and end before it (what a
  // graph capture of the first stream and its synchronisation need).
  for (const BoundLaunch &b : state.launches)
    if (b.stream != state.first &&
        std::find(state.sides.begin(), state.sides.end(), b.stream) ==
            state.sides.end())
      state.sides.push_back(b.stream);
  if (!state.sides.empty()) {
    absl::StatusOr<void *> fork = device->createEvent();
    if (!fork.ok())
      return fork.status();
    state.fork = *fork;
    for (size_t i = 0; i < state.sides.size(); ++i) {
      absl::StatusOr<void *> join = device->createEvent();
      if (!join.ok())
        return join.status();
      state.joins.push_back(*join);
    }
  }
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::enqueue(ProgramState &state) {
  // The program's first stream starts it and ends it; the others fork from
  // it and join it.
  void *first = state.first;
  if (absl::Status s =
          device->zeroAsync(state.error.address, state.error.bytes, first);
      !s.ok())
    return s;
  if (state.fork) {
    if (absl::Status s = device->record(state.fork, first); !s.ok())
      return s;
    for (void *side : state.sides)
      if (absl::Status s = device->wait(side, state.fork); !s.ok())
        return s;
  }
  for (BoundLaunch &b : state.launches) {
    const GpuLaunch &l = *b.launch;
    void *on = b.stream;
    absl::Status s;
    switch (l.kind) {
    case GpuLaunch::Kind::Record:
      s = device->record(state.events[l.event], on);
      break;
    case GpuLaunch::Kind::Wait:
      s = device->wait(on, state.events[l.event]);
      break;
    case GpuLaunch::Kind::Kernel:
      s = device->launchAsync(b.function, l.grid, l.block, b.argv.data(), on);
      break;
    case GpuLaunch::Kind::Gemm:
      s = blas->matmul(b.gemm,
                       GemmOperands{b.addresses[0], b.addresses[1],
                                    b.addresses[2], b.addresses[3],
                                    b.addresses[4], b.addresses[5],
                                    b.addresses[6]},
                       on);
      break;
    case GpuLaunch::Kind::Zero:
      s = device->zeroAsync(b.addresses[0], l.bytes, on);
      break;
    case GpuLaunch::Kind::Copy:
      s = device->copyAsync(b.addresses[0], b.addresses[1], l.bytes, on);
      break;
    case GpuLaunch::Kind::HostRead: {
      // The stream has then computed the sizes (the program's events order
      // their producer before this launch, as before any reader).
      std::vector<int32_t> &slot = state.hostSlots[l.slot];
      s = device->synchronize(on);
      if (s.ok())
        s = device->copyToHost(slot.data(),
                               DeviceBuffer{b.addresses[0], size_t(l.bytes)},
                               l.bytes);
      break;
    }
    case GpuLaunch::Kind::GroupedGemm: {
      absl::StatusOr<GroupedGemmWork> work = groupedGemmWork(
          l.grouped, state.hostSlots[l.slot].data(), b.addresses[0],
          b.addresses[1], b.addresses[2],
          absl::StrCat(
              "program ", state.spec->name, ", instruction ", l.instruction,
              " (", sched::opName(state.spec->instructions[l.instruction].op),
              ")"));
      if (!work.ok())
        return work.status(); // Names the program and instruction.
      s = work->zeroBytes
              ? device->zeroAsync(work->zeroFrom, work->zeroBytes, on)
              : absl::OkStatus();
      if (s.ok() && !work->problems.empty())
        s = blas->groupedMatmul(work->problems, b.scratch, on);
      break;
    }
    case GpuLaunch::Kind::Collective: {
      GpuCollectives &c = *options.collectives;
      uint64_t in = b.addresses[0], out = b.addresses[1];
      switch (l.collective) {
      case GpuCollective::AllReduce:
      case GpuCollective::AllReduceMax:
        s = c.allReduce(l.axes, in, l.count,
                        l.collective == GpuCollective::AllReduceMax, on);
        break;
      case GpuCollective::AllGather:
        s = c.allGather(l.axes, in, out, l.count, on);
        break;
      case GpuCollective::ReduceScatter:
        s = c.reduceScatter(l.axes, in, out, l.count, on);
        break;
      case GpuCollective::AllToAll:
        s = c.allToAll(l.axes, in, out, l.count, on);
        break;
      case GpuCollective::RingShift:
        s = c.ringShift(l.axes.front(), l.delta, l.tag, in, out, l.bytes, on);
        break;
      }
      break;
    }
    }
    if (!s.ok())
      return absl::Status(
          s.code(),
          absl::StrCat(
              "instruction ", l.instruction, " (",
              sched::opName(state.spec->instructions[l.instruction].op),
              "): ", s.message()));
  }
  for (size_t i = 0; i < state.sides.size(); ++i) {
    if (absl::Status s = device->record(state.joins[i], state.sides[i]);
        !s.ok())
      return s;
    if (absl::Status s = device->wait(first, state.joins[i]); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::enqueueAssigns(ProgramState &state) {
  // The optimizer's new parameters and state: only once the program found
  // its data good (readError), as the CPU runtime applies them only after
  // its last instruction succeeded.
  for (const sched::Assign &a : state.spec->assigns) {
    const sched::Param *p = bundle->param(a.param);
    if (absl::Status s = device->copyAsync(
            params[p - bundle->params.data()].address, state.address[a.buffer],
            static_cast<size_t>(p->type.bytes()), state.first);
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::readError(const ProgramState &state) {
  int32_t word[4] = {};
  if (absl::Status s = device->copyToHost(word, state.error, sizeof(word));
      !s.ok())
    return s;
  if (word[0] == 0)
    return absl::OkStatus();
  const char *what = word[0] == WEFT_ERROR_TOKEN_ID   ? "token id "
                     : word[0] == WEFT_ERROR_LABEL    ? "label "
                     : word[0] == WEFT_ERROR_POSITION ? "routing position "
                     : word[0] == WEFT_ERROR_GROUP    ? "group size "
                                                      : "expert id ";
  const char *why =
      word[0] == WEFT_ERROR_EXPERT_ID  ? " is outside the experts"
      : word[0] == WEFT_ERROR_POSITION ? " is outside the packed rows"
      : word[0] == WEFT_ERROR_GROUP    ? " makes the groups overrun the rows"
                                       : " is outside the vocabulary";
  const char *op =
      word[1] >= 0 &&
              word[1] < static_cast<int64_t>(state.spec->instructions.size())
          ? sched::opName(state.spec->instructions[word[1]].op)
          : "?";
  return absl::OutOfRangeError(absl::StrCat(
      "program ", state.spec->name, ", instruction ", word[1], " (", op,
      "): ", what, word[3], " at position ", word[2], why));
}

GpuBackend::~GpuBackend() = default;

absl::StatusOr<std::unique_ptr<GpuBackend>>
GpuBackend::create(const sched::SchedBundle &bundle, Options options) {
  MeshSpec mesh = meshSpecOf(bundle);
  bool placed = mesh.size() > 1;
  if (placed && !options.collectives && !options.comm)
    return absl::FailedPreconditionError(
        absl::StrCat(bundle.dir, ": the bundle is placed on ", mesh.size(),
                     " ranks; run it with weft-run --nproc ", mesh.size(),
                     " (or under torchrun)"));
  absl::StatusOr<std::unique_ptr<CudaDevice>> device =
      CudaDevice::open(options.deviceOrdinal);
  if (!device.ok())
    return device.status();
  if (absl::Status s = loadKernels(device->get(), bundle); !s.ok())
    return s;
  absl::StatusOr<DeviceBuffer> workspace =
      (*device)->allocate(kGemmWorkspaceBytes);
  if (!workspace.ok())
    return workspace.status();
  absl::StatusOr<std::unique_ptr<CublasLt>> blas =
      CublasLt::open(**device, workspace->address, kGemmWorkspaceBytes);
  if (!blas.ok())
    return blas.status();
  std::unique_ptr<NcclCollectives> nccl;
  if (placed && !options.collectives) {
    absl::StatusOr<std::unique_ptr<NcclCollectives>> made =
        NcclCollectives::create(*options.comm, communicationGroups(bundle));
    if (!made.ok())
      return made.status();
    nccl = std::move(*made);
    options.collectives = nccl.get();
    options.rank = options.comm->rank();
  }
  absl::StatusOr<std::unique_ptr<GpuBackend>> backend =
      createOn(bundle, options, std::move(*device), std::move(*blas));
  if (backend.ok())
    (*backend)->impl->nccl = std::move(nccl);
  return backend;
}

absl::StatusOr<std::unique_ptr<GpuBackend>>
GpuBackend::createOn(const sched::SchedBundle &bundle, Options options,
                     std::unique_ptr<GpuDevice> device,
                     std::unique_ptr<GemmEngine> gemm) {
  std::unique_ptr<GpuBackend> backend(new GpuBackend);
  backend->impl = std::make_unique<Impl>();
  Impl &g = *backend->impl;
  g.bundle = &bundle;
  g.options = options;
  g.mesh = meshSpecOf(bundle);
  g.device = std::move(device);
  g.blas = std::move(gemm);
  for (const sched::Param &p : bundle.params) {
    if (!rankHolds(g.mesh, options.rank, p)) {
      g.params.emplace_back();
      continue;
    }
    absl::StatusOr<DeviceBuffer> b =
        g.device->allocate(static_cast<size_t>(p.type.bytes()));
    if (!b.ok())
      return b.status();
    g.params.push_back(*b);
  }
  for (const sched::Constant &c : bundle.constants) {
    std::vector<uint8_t> bytes = constantBytes(c);
    absl::StatusOr<DeviceBuffer> b = g.device->allocate(bytes.size());
    if (!b.ok())
      return b.status();
    if (absl::Status s = g.device->copyToDevice(*b, bytes.data(), bytes.size());
        !s.ok())
      return s;
    g.constants.push_back(*b);
  }
  std::vector<bool> mine = programsOfRank(bundle, options.rank);
  int64_t arena = 0;
  for (size_t i = 0; i < bundle.programs.size(); ++i)
    if (mine[i])
      arena = std::max(arena, bundle.programs[i].arena +
                                  alignmentSlack(bundle.programs[i]));
  absl::StatusOr<DeviceBuffer> shared =
      g.device->allocate(static_cast<size_t>(arena));
  if (!shared.ok())
    return shared.status();
  g.arena = *shared;
  for (size_t i = 0; i < bundle.programs.size(); ++i)
    if (mine[i])
      if (absl::Status s = g.bindProgram(bundle.programs[i],
                                         g.programs[bundle.programs[i].name]);
          !s.ok())
        return s;
  return backend;
}

std::string GpuBackend::describe() const {
  return absl::StrCat(impl->device->name(), " (", impl->device->arch(), ")");
}

// Another pipeline rank's parameter has no device copy: nothing to move.
absl::Status GpuBackend::uploadParam(size_t k, const void *bytes) {
  if (impl->params.at(k).bytes == 0)
    return absl::OkStatus();
  return impl->device->copyToDevice(impl->params.at(k), bytes,
                                    impl->params.at(k).bytes);
}

absl::Status GpuBackend::downloadParam(size_t k, void *bytes) {
  if (impl->params.at(k).bytes == 0)
    return absl::OkStatus();
  return impl->device->copyToHost(bytes, impl->params.at(k),
                                  impl->params.at(k).bytes);
}

absl::Status GpuBackend::run(const std::string &name,
                             const std::vector<const void *> &inputs) {
  Impl &g = *impl;
  auto it = g.programs.find(name);
  if (it == g.programs.end())
    return absl::NotFoundError(absl::StrCat("no program '", name, "'"));
  ProgramState &state = it->second;
  if (inputs.size() != state.inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("program ", name, " takes ", state.inputs.size(),
                     " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (absl::Status s = g.device->copyToDevice(state.inputs[i], inputs[i],
                                                state.inputs[i].bytes);
        !s.ok())
      return s;
  void *first = state.first;
  g.lastRun = &state;
  // The first run goes launch by launch, so a failing launch is named; later
  // runs replay what the second recorded.
  if (state.ranOnce && g.options.graphs && !state.graph && !state.noGraph) {
    absl::StatusOr<void *> graph =
        g.device->capture(first, [&] { return g.enqueue(state); });
    if (graph.ok()) {
      state.graph = *graph;
    } else {
      // Launch by launch is slower but equivalent: say so once, go on.
      state.noGraph = true;
      std::fprintf(stderr,
                   "weft: program %s runs without a CUDA graph (capture "
                   "failed: %s)\n",
                   name.c_str(), std::string(graph.status().message()).c_str());
    }
  }
  absl::Status queued =
      state.graph ? g.device->replay(state.graph, first) : g.enqueue(state);
  if (!queued.ok())
    return queued;
  if (absl::Status s = g.device->synchronize(first); !s.ok())
    return s;
  state.ranOnce = true;
  if (absl::Status s = g.readError(state); !s.ok())
    return s;
  if (state.spec->assigns.empty())
    return absl::OkStatus();
  if (absl::Status s = g.enqueueAssigns(state); !s.ok())
    return s;
  return g.device->synchronize(first);
}

absl::StatusOr<std::vector<uint8_t>>
GpuBackend::bufferBytes(const std::string &program, int64_t buffer) {
  auto it = impl->programs.find(program);
  if (it == impl->programs.end())
    return absl::NotFoundError(absl::StrCat("no program '", program, "'"));
  const ProgramState &state = it->second;
  if (buffer < 0 || buffer >= static_cast<int64_t>(state.address.size()))
    return absl::OutOfRangeError(
        absl::StrCat("program ", program, " has no buffer ", buffer));
  // The programs share one arena: another's run since overwrote it.
  const sched::Buffer *root = &state.spec->buffers[buffer];
  while (root->kind == sched::Buffer::Kind::View)
    root = &state.spec->buffers[root->of];
  if (root->kind == sched::Buffer::Kind::Alloc && impl->lastRun != &state)
    return absl::FailedPreconditionError(absl::StrCat(
        "program ", program, "'s buffer ", buffer,
        " is gone: another program ran since, in the arena they share"));
  std::vector<uint8_t> bytes(
      static_cast<size_t>(state.spec->buffers[buffer].type.bytes()));
  if (absl::Status s = impl->device->copyToHost(
          bytes.data(), DeviceBuffer{state.address[buffer], bytes.size()},
          bytes.size());
      !s.ok())
    return s;
  return bytes;
}

} // namespace weft::runtime

//===- GpuBackend.cpp - run a bundle's programs on a GPU ------------------===//

#include "runtime/gpu/GpuBackend.h"

#include "runtime/gpu/CublasLt.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/GpuPlan.h"
#include "runtime/gpu/Nccl.h"
#include "runtime/gpu/Nvrtc.h"
#include "runtime/gpu/kernels/OpsAbi.h"

#include "absl/strings/str_cat.h"

#include <cstdio>
#include <cstring>

namespace weft::runtime {
namespace {
/// cuBLASLt's workspace; 32 MiB is what it asks for on Hopper at most.
constexpr size_t kGemmWorkspaceBytes = 32u << 20;

/// A launch with its arguments laid out as cuLaunchKernel takes them.
struct BoundLaunch {
  const GpuLaunch *launch = nullptr;
  void *function = nullptr;
  std::string blob;                // The arguments' values, each aligned.
  std::vector<size_t> offsets;     // Where each starts in blob.
  std::vector<void *> argv;        // Pointers into blob, once it stays put.
  std::vector<uint64_t> addresses; // Buffer arguments, resolved.
  GemmShape gemm;                  // The plan's, with the alignments.
};

struct ProgramState {
  const ProgramSpec *spec = nullptr;
  GpuProgramPlan plan;
  std::vector<uint64_t> address;          // Per value.
  std::map<int64_t, DeviceBuffer> inputs; // By value id.
  uint64_t scratch = 0;                   // The scratch arena.
  DeviceBuffer error;
  std::vector<void *> events;
  std::vector<BoundLaunch> launches;
  bool ranOnce = false;
  void *graph = nullptr;
  bool noGraph = false; // Capture failed once: launch by launch from then.
};
} // namespace

struct GpuBackend::Impl {
  const Bundle *bundle = nullptr;
  Options options;
  std::unique_ptr<GpuDevice> device;
  std::unique_ptr<GemmEngine> blas; // Declared after the device: freed first.
  std::unique_ptr<GpuCollectives> nccl; // Made by create(); freed first.
  void *stream = nullptr;               // Compute.
  void *commStream = nullptr;           // Collective steps, beside the compute.
  std::map<std::string, DeviceBuffer> params;
  std::vector<DeviceBuffer> constants;
  std::map<std::string, ProgramState> programs;

  absl::Status bindProgram(const std::string &name, ProgramState &state);
  absl::Status bindLaunch(ProgramState &state, const GpuLaunch &launch);
  uint64_t resolve(const ProgramState &state, const GpuBuffer &b) const;
  absl::Status enqueue(ProgramState &state);
  absl::Status readError(const ProgramState &state, const std::string &name);
};

namespace {
/// Loads the bundle's generated kernels (its cubin for this GPU, else its
/// source through NVRTC) and the runtime's own (NVRTC).
absl::Status loadKernels(CudaDevice *device, const Bundle *bundle) {
  bool generated = false; // Whether any step runs a generated kernel.
  for (const auto &[name, program] : bundle->programs)
    for (const StepSpec &step : program.steps)
      generated |= step.op == "weft.fused";
  auto cuda = bundle->meta.find("cuda");
  bool hasCuda = cuda != bundle->meta.end() && cuda->is_object();
  if (generated && !hasCuda)
    return absl::FailedPreconditionError(absl::StrCat(
        bundle->path, ": the bundle has no CUDA kernels; compile it with "
                      "weftc compile --target cuda"));
  if (hasCuda) {
    std::string cubin, source = cuda->value("source", "");
    if (auto cubins = cuda->find("cubins");
        cubins != cuda->end() && cubins->is_object())
      cubin = cubins->value(device->arch(), "");
    if (absl::Status s = device->loadBundleKernels(bundle->path, cubin, source);
        !s.ok())
      return s;
  }
  // The runtime's own, built into it.
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

uint64_t GpuBackend::Impl::resolve(const ProgramState &state,
                                   const GpuBuffer &b) const {
  switch (b.kind) {
  case GpuBuffer::Kind::Value:
    return state.address[b.id] + b.offset;
  case GpuBuffer::Kind::Scratch:
    return state.scratch + state.plan.scratchOffsets[b.id] + b.offset;
  case GpuBuffer::Kind::Error:
    return state.error.address;
  }
  return 0;
}

absl::Status GpuBackend::Impl::bindLaunch(ProgramState &state,
                                          const GpuLaunch &launch) {
  BoundLaunch bound;
  bound.launch = &launch;
  for (const GpuArg &a : launch.args)
    bound.addresses.push_back(
        a.kind == GpuArg::Kind::Buffer ? resolve(state, a.buffer) : 0);
  if (launch.kind == GpuLaunch::Kind::Gemm) {
    // Each matrix's alignment, now that its address is known.
    auto alignment = [](uint64_t address) {
      int64_t a = 256;
      while (a > 1 && address % a)
        a /= 2;
      return a;
    };
    bound.gemm = launch.gemm;
    bound.gemm.alignA = alignment(bound.addresses[0]);
    bound.gemm.alignB = alignment(bound.addresses[1]);
    bound.gemm.alignC = alignment(bound.addresses[2]);
    bound.gemm.alignBias = alignment(bound.addresses[3]);
    bound.gemm.alignAux = alignment(bound.addresses[4]);
    if (absl::Status s = blas->prepare(bound.gemm); !s.ok())
      return s;
  } else if (launch.kind == GpuLaunch::Kind::Kernel) {
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
  }
  state.launches.push_back(std::move(bound));
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::bindProgram(const std::string &name,
                                           ProgramState &state) {
  const ProgramSpec &spec = bundle->programs.at(name);
  state.spec = &spec;
  absl::StatusOr<GpuProgramPlan> plan =
      planGpuProgram(*bundle, name, options.plan);
  if (!plan.ok())
    return plan.status();
  state.plan = std::move(*plan);
  absl::StatusOr<DeviceBuffer> arena = device->allocate(spec.arenaBytes);
  if (!arena.ok())
    return arena.status();
  state.address.resize(spec.values.size());
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const ValueSpec &v = spec.values[i];
    switch (v.kind) {
    case ValueSpec::Kind::Arena:
      state.address[i] = arena->address + v.offset;
      break;
    case ValueSpec::Kind::Param:
      state.address[i] = params.at(v.param).address;
      break;
    case ValueSpec::Kind::Constant:
      state.address[i] = constants.at(v.index).address;
      break;
    case ValueSpec::Kind::Input: {
      absl::StatusOr<DeviceBuffer> in = device->allocate(v.bytes());
      if (!in.ok())
        return in.status();
      state.inputs[static_cast<int64_t>(i)] = *in;
      state.address[i] = in->address;
      break;
    }
    }
  }
  for (size_t i = 0; i < spec.values.size(); ++i)
    state.address[i] = state.address[state.plan.storageOf[i]];
  absl::StatusOr<DeviceBuffer> scratch =
      device->allocate(state.plan.scratchArenaBytes);
  if (!scratch.ok())
    return scratch.status();
  state.scratch = scratch->address;
  absl::StatusOr<DeviceBuffer> error = device->allocate(4 * sizeof(int32_t));
  if (!error.ok())
    return error.status();
  state.error = *error;
  for (int64_t e = 0; e < state.plan.events; ++e) {
    absl::StatusOr<void *> event = device->createEvent();
    if (!event.ok())
      return event.status();
    state.events.push_back(*event);
  }
  for (const GpuLaunch &launch : state.plan.launches)
    if (absl::Status s = bindLaunch(state, launch); !s.ok())
      return absl::Status(s.code(), absl::StrCat(bundle->path, ": program ",
                                                 name, ", step ", launch.step,
                                                 ": ", s.message()));
  // Pointers into the blobs only now: moving a short string moves its bytes.
  for (BoundLaunch &b : state.launches)
    for (size_t at : b.offsets)
      b.argv.push_back(b.blob.data() + at);
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::enqueue(ProgramState &state) {
  if (absl::Status s =
          device->zeroAsync(state.error.address, state.error.bytes, stream);
      !s.ok())
    return s;
  for (BoundLaunch &b : state.launches) {
    const GpuLaunch &l = *b.launch;
    void *stream = l.comm ? commStream : this->stream;
    absl::Status s;
    switch (l.kind) {
    case GpuLaunch::Kind::Record:
      s = device->record(state.events[l.event], stream);
      break;
    case GpuLaunch::Kind::Wait:
      s = device->wait(stream, state.events[l.event]);
      break;
    case GpuLaunch::Kind::Kernel:
      s = device->launchAsync(b.function, l.grid, l.block, b.argv.data(),
                              stream);
      break;
    case GpuLaunch::Kind::Gemm:
      s = blas->matmul(b.gemm,
                       GemmOperands{b.addresses[0], b.addresses[1],
                                    b.addresses[2], b.addresses[3],
                                    b.addresses[4]},
                       stream);
      break;
    case GpuLaunch::Kind::Zero:
      s = device->zeroAsync(b.addresses[0], l.bytes, stream);
      break;
    case GpuLaunch::Kind::Copy:
      s = device->copyAsync(b.addresses[0], b.addresses[1], l.bytes, stream);
      break;
    case GpuLaunch::Kind::Collective:
      s = l.collective == "all_reduce" || l.collective == "all_reduce_max"
              ? options.collectives->allReduce(l.axes, b.addresses[0], l.count,
                                               l.collective == "all_reduce_max",
                                               stream)
          : l.collective == "all_gather"
              ? options.collectives->allGather(l.axes, b.addresses[0],
                                               b.addresses[1], l.count, stream)
          : l.collective == "all_to_all"
              ? options.collectives->allToAll(l.axes, b.addresses[0],
                                              b.addresses[1], l.count, stream)
              : options.collectives->reduceScatter(
                    l.axes, b.addresses[0], b.addresses[1], l.count, stream);
      break;
    }
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat("step ", l.step, " (",
                                                 state.spec->steps[l.step].op,
                                                 "): ", s.message()));
  }
  // The optimizer's new parameters and state.
  for (const auto &[param, id] : state.spec->assigns)
    if (absl::Status s =
            device->copyAsync(params.at(param).address, state.address[id],
                              state.spec->values[id].bytes(), stream);
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::Status GpuBackend::Impl::readError(const ProgramState &state,
                                         const std::string &name) {
  int32_t word[4] = {};
  if (absl::Status s = device->copyToHost(word, state.error, sizeof(word));
      !s.ok())
    return s;
  if (word[0] == 0)
    return absl::OkStatus();
  const StepSpec &step = state.spec->steps.at(word[1]);
  const char *what = word[0] == WEFT_ERROR_TOKEN_ID ? "token id "
                     : word[0] == WEFT_ERROR_LABEL  ? "label "
                                                    : "expert id ";
  return absl::OutOfRangeError(absl::StrCat(
      "program ", name, ", step ", word[1], ": ", step.op, ": ", what, word[3],
      " at position ", word[2],
      word[0] == WEFT_ERROR_EXPERT_ID ? " is outside the experts"
                                      : " is outside the vocabulary"));
}

GpuBackend::~GpuBackend() = default;

absl::StatusOr<std::unique_ptr<GpuBackend>>
GpuBackend::create(const Bundle &bundle,
                   const std::map<std::string, std::vector<float>> &params,
                   Options options) {
  bool placed = bundle.mesh.size() > 1;
  if (placed && !options.collectives && !options.comm)
    return absl::FailedPreconditionError(absl::StrCat(
        bundle.path, ": the bundle is placed on ", bundle.mesh.size(),
        " ranks; run it with weft-run --nproc ", bundle.mesh.size(),
        " (or under torchrun)"));
  absl::StatusOr<std::unique_ptr<CudaDevice>> device =
      CudaDevice::open(options.deviceOrdinal);
  if (!device.ok())
    return device.status();
  if (absl::Status s = loadKernels(device->get(), &bundle); !s.ok())
    return s;
  absl::StatusOr<DeviceBuffer> workspace =
      (*device)->allocate(kGemmWorkspaceBytes);
  if (!workspace.ok())
    return workspace.status();
  absl::StatusOr<std::unique_ptr<CublasLt>> blas =
      CublasLt::open(workspace->address, kGemmWorkspaceBytes);
  if (!blas.ok())
    return blas.status();
  std::unique_ptr<NcclCollectives> nccl;
  if (placed && !options.collectives) {
    absl::StatusOr<std::unique_ptr<NcclCollectives>> made =
        NcclCollectives::create(*options.comm, bundle.communicationGroups());
    if (!made.ok())
      return made.status();
    nccl = std::move(*made);
    options.collectives = nccl.get();
    options.plan.rank = options.comm->rank();
  }
  absl::StatusOr<std::unique_ptr<GpuBackend>> backend =
      createOn(bundle, params, options, std::move(*device), std::move(*blas));
  if (backend.ok())
    (*backend)->impl->nccl = std::move(nccl);
  return backend;
}

absl::StatusOr<std::unique_ptr<GpuBackend>>
GpuBackend::createOn(const Bundle &bundle,
                     const std::map<std::string, std::vector<float>> &params,
                     Options options, std::unique_ptr<GpuDevice> device,
                     std::unique_ptr<GemmEngine> gemm) {
  if (bundle.mesh.size() > 1 && !options.collectives)
    return absl::FailedPreconditionError(absl::StrCat(
        bundle.path, ": the bundle is placed on ", bundle.mesh.size(),
        " ranks but no collectives were given"));
  std::unique_ptr<GpuBackend> backend(new GpuBackend);
  backend->impl = std::make_unique<Impl>();
  Impl &g = *backend->impl;
  g.bundle = &bundle;
  g.options = options;
  g.device = std::move(device);
  g.blas = std::move(gemm);
  absl::StatusOr<void *> stream = g.device->createStream();
  if (!stream.ok())
    return stream.status();
  g.stream = *stream;
  absl::StatusOr<void *> commStream = g.device->createStream();
  if (!commStream.ok())
    return commStream.status();
  g.commStream = *commStream;
  for (const auto &[name, data] : params) {
    absl::StatusOr<DeviceBuffer> b = g.device->allocate(data.size() * 4);
    if (!b.ok())
      return b.status();
    g.params[name] = *b;
  }
  for (const ConstantSpec &c : bundle.constants) {
    std::vector<uint8_t> bytes = c.encoded();
    absl::StatusOr<DeviceBuffer> b = g.device->allocate(bytes.size());
    if (!b.ok())
      return b.status();
    if (absl::Status s = g.device->copyToDevice(*b, bytes.data(), bytes.size());
        !s.ok())
      return s;
    g.constants.push_back(*b);
  }
  for (const auto &[name, spec] : bundle.programs)
    if (absl::Status s = g.bindProgram(name, g.programs[name]); !s.ok())
      return s;
  return backend;
}

std::string GpuBackend::describe() const {
  return absl::StrCat(impl->device->name(), " (", impl->device->arch(), ")");
}

absl::Status GpuBackend::uploadParams(
    const std::map<std::string, std::vector<float>> &params) {
  for (const auto &[name, data] : params)
    if (absl::Status s = impl->device->copyToDevice(
            impl->params.at(name), data.data(), data.size() * 4);
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::Status
GpuBackend::downloadParams(std::map<std::string, std::vector<float>> &params) {
  for (auto &[name, data] : params)
    if (absl::Status s = impl->device->copyToHost(
            data.data(), impl->params.at(name), data.size() * 4);
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::Status GpuBackend::run(const std::string &name,
                             const std::vector<const void *> &inputs) {
  Impl &g = *impl;
  auto it = g.programs.find(name);
  if (it == g.programs.end())
    return absl::NotFoundError(absl::StrCat("no program '", name, "'"));
  ProgramState &state = it->second;
  if (inputs.size() != state.spec->inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("program ", name, " takes ", state.spec->inputs.size(),
                     " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DeviceBuffer &slot = state.inputs.at(state.spec->inputs[i]);
    if (absl::Status s = g.device->copyToDevice(slot, inputs[i], slot.bytes);
        !s.ok())
      return s;
  }
  // The first run goes launch by launch, so a failing launch is named; later
  // runs replay what the second recorded.
  if (state.ranOnce && g.options.graphs && !state.graph && !state.noGraph) {
    absl::StatusOr<void *> graph =
        g.device->capture(g.stream, [&] { return g.enqueue(state); });
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
      state.graph ? g.device->replay(state.graph, g.stream) : g.enqueue(state);
  if (!queued.ok())
    return queued;
  if (absl::Status s = g.device->synchronize(g.stream); !s.ok())
    return s;
  state.ranOnce = true;
  return g.readError(state, name);
}

absl::StatusOr<std::vector<float>>
GpuBackend::output(const std::string &program, const std::string &name) {
  auto it = impl->programs.find(program);
  if (it == impl->programs.end())
    return absl::NotFoundError(absl::StrCat("no program '", program, "'"));
  const ProgramState &state = it->second;
  std::optional<int64_t> id = state.spec->output(name);
  if (!id)
    return absl::NotFoundError(
        absl::StrCat("program ", program, " has no output '", name, "'"));
  const ValueSpec &v = state.spec->values[*id];
  std::vector<uint8_t> bytes(v.bytes());
  if (absl::Status s = impl->device->copyToHost(
          bytes.data(), DeviceBuffer{state.address[*id], bytes.size()},
          bytes.size());
      !s.ok())
    return s;
  return decodeAll(bytes.data(), v.numElements(), v.dtype);
}

} // namespace weft::runtime

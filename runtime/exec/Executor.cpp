//===- Executor.cpp - run a bundle's programs on the CPU ------------------===//

#include "runtime/exec/Executor.h"

#include "runtime/exec/ParamBlocks.h"
#include "runtime/gpu/GpuBackend.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <limits>

namespace weft::runtime {

struct Executor::Program {
  const ProgramSpec *spec = nullptr;
  std::vector<float> arena; // float-aligned storage of arenaBytes.
  std::vector<std::vector<int32_t>> inputs;
  std::vector<Buf> values;
  std::vector<Kernel> kernels;
  /// Per arena value: the step that defines it and the last that reads it
  /// (outputs and assigns count as read at the end).
  std::vector<int64_t> firstUse, lastUse;
  /// f32 copies of narrow (bf16, f16) values for the steps that use them.
  std::deque<ValueSpec> shadowSpecs;
  std::deque<std::vector<float>> shadows;
};

Executor::~Executor() {
  gpu_.reset();
  programs_.clear(); // Kernels point into the library: drop them first.
  if (library_)
    dlclose(library_);
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::create(Bundle bundle,
                                                           Options options) {
  std::unique_ptr<Executor> ex(new Executor());
  ex->bundle_ = std::move(bundle);
  ex->options_ = options;
  for (const ParamSpec &p : ex->bundle_.params) {
    if (p.dtype != DType::F32)
      return absl::UnimplementedError(
          absl::StrCat(ex->bundle_.path, ": parameter '", p.name, "' is ",
                       std::string(dtypeName(p.dtype)),
                       "; the CPU runtime holds f32 parameters"));
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    ex->params_[p.name].assign(n, 0.0f);
  }
  for (const ConstantSpec &c : ex->bundle_.constants) {
    // Float-aligned storage of the encoded elements (a narrow constant is
    // widened like any narrow value before a step reads it).
    std::vector<uint8_t> bytes = c.encoded();
    std::vector<float> data((bytes.size() + 3) / 4);
    std::memcpy(data.data(), bytes.data(), bytes.size());
    ex->constants_.push_back(std::move(data));
  }
  // Generated kernels: a shared object named by meta.kernels, relative to
  // the bundle directory unless absolute.
  // (The GPU loads the CUDA versions instead.)
  if (auto it = ex->bundle_.meta.find("kernels");
      !options.cuda && it != ex->bundle_.meta.end() && it->is_string()) {
    std::string path = it->get<std::string>();
    if (!path.empty() && path.front() != '/')
      path = ex->bundle_.path + "/" + path;
    ex->library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!ex->library_)
      return absl::NotFoundError(absl::StrCat(
          path, ": cannot load the bundle's kernels: ", dlerror()));
  }
  if (ex->bundle_.mesh.size() > 1) {
    if (!options.comm)
      return absl::FailedPreconditionError(absl::StrCat(
          ex->bundle_.path, ": the bundle is placed on ",
          ex->bundle_.mesh.size(), " ranks; run it with weft-run --nproc ",
          ex->bundle_.mesh.size(), " (or under torchrun)"));
    // Every rank opens the same groups in the same order.
    std::vector<std::vector<std::string>> groups =
        ex->bundle_.communicationGroups();
    if (absl::Status s = options.comm->setMesh(ex->bundle_.mesh, groups);
        !s.ok())
      return s;
  }
  if (options.cuda) {
    // The GPU runs every program; the host keeps parameters for
    // initialization, checkpoints and gathering.
    GpuBackend::Options gpu;
    gpu.graphs = options.cudaGraphs;
    if (options.comm) { // A placed bundle: NCCL, and this rank's GPU.
      gpu.comm = options.comm;
      gpu.plan.rank = options.comm->rank();
      gpu.deviceOrdinal = static_cast<int>(options.comm->localRank());
    }
    absl::StatusOr<std::unique_ptr<GpuBackend>> backend =
        GpuBackend::create(ex->bundle_, ex->params_, gpu);
    if (!backend.ok())
      return backend.status();
    ex->gpu_ = std::move(*backend);
    return ex;
  }
  for (const auto &[name, spec] : ex->bundle_.programs)
    if (absl::Status s = ex->bind(name, spec); !s.ok())
      return s;
  return ex;
}

absl::StatusOr<VocabBlock> Executor::vocabBlock(const StepSpec &step,
                                                const std::vector<Buf> &in,
                                                const std::vector<Buf> &out) {
  auto it = step.attrs.find("vocab_axes");
  if (it == step.attrs.end())
    return VocabBlock();
  std::vector<std::string> axes;
  if (it->is_array())
    for (const auto &a : *it)
      if (a.is_string() && bundle_.mesh.axisIndex(a.get<std::string>()) >= 0)
        axes.push_back(a.get<std::string>());
  if (axes.empty() || axes.size() != it->size())
    return absl::InvalidArgumentError("'vocab_axes' must name mesh axes");
  if (!options_.comm)
    return absl::FailedPreconditionError(
        "a vocabulary-parallel step needs a multi-rank job");
  // The vocabulary is the table's rows (embedding, its gradient) or the
  // logits' last dimension (cross-entropy, its gradient).
  bool rows = step.op == "weft.embedding" || step.op == "weft.embedding_grad";
  if (!rows && step.op != "weft.cross_entropy" &&
      step.op != "weft.cross_entropy_grad")
    return absl::InvalidArgumentError(
        absl::StrCat(step.op, " cannot have 'vocab_axes'"));
  if (in.empty() || out.empty())
    return absl::InvalidArgumentError("a vocabulary-parallel step needs "
                                      "operands and a result");
  const Buf &held = step.op == "weft.embedding_grad" ? out[0] : in[0];
  if (held.shape().empty())
    return absl::InvalidArgumentError("the vocabulary operand is a scalar");
  int64_t local = rows ? held.shape().front() : held.shape().back();
  const MeshSpec &mesh = bundle_.mesh;
  VocabBlock block;
  block.offset = local * mesh.groupRank(rank(), axes);
  block.total = local * mesh.groupSize(axes);
  if (!rows) {
    Communicator *comm = options_.comm;
    block.combine = [comm, axes](float *data, size_t count, bool max) {
      return comm->allReduce(axes, data, count, max);
    };
  }
  return block;
}

absl::Status Executor::bind(const std::string &name, const ProgramSpec &spec) {
  auto program = std::make_unique<Program>();
  program->spec = &spec;
  program->arena.assign(spec.arenaBytes / sizeof(float) + 1, 0.0f);
  char *arena = reinterpret_cast<char *>(program->arena.data());
  for (const ValueSpec &v : spec.values) {
    Buf buf{nullptr, &v};
    switch (v.kind) {
    case ValueSpec::Kind::Arena:
      buf.data = arena + v.offset;
      break;
    case ValueSpec::Kind::Param:
      buf.data = reinterpret_cast<char *>(params_.at(v.param).data());
      if (static_cast<int64_t>(params_.at(v.param).size()) != v.numElements())
        return absl::InvalidArgumentError(absl::StrCat(
            bundle_.path, ": program ", name, " reads parameter '", v.param,
            "' with a shape that differs from its declaration"));
      break;
    case ValueSpec::Kind::Constant:
      buf.data = reinterpret_cast<char *>(constants_.at(v.index).data());
      break;
    case ValueSpec::Kind::Input:
      program->inputs.emplace_back(v.numElements(), 0);
      buf.data = reinterpret_cast<char *>(program->inputs.back().data());
      break;
    }
    program->values.push_back(buf);
  }
  // A view (reshape, copy_to_group) of something outside the arena (a
  // parameter, constant or input) reads it in place: no per-step copy. Views
  // of arena values already share their operand's offset (memory plan).
  char *arenaEnd = arena + spec.arenaBytes;
  for (const StepSpec &step : spec.steps)
    if ((step.op == "weft.reshape" || step.op == "weft.copy_to_group") &&
        step.operands.size() == 1 && step.results.size() == 1) {
      Buf &from = program->values[step.operands[0]];
      Buf &to = program->values[step.results[0]];
      bool outside = from.data < arena || from.data >= arenaEnd;
      if (outside && from.spec->bytes() == to.spec->bytes())
        to.data = from.data;
    }
  size_t n = spec.values.size();
  program->firstUse.assign(n, -1);
  program->lastUse.assign(n, -1);
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const StepSpec &step = spec.steps[i];
    std::vector<Buf> in, out;
    for (int64_t id : step.operands) {
      in.push_back(program->values[id]);
      program->lastUse[id] = i;
    }
    for (int64_t id : step.results) {
      out.push_back(program->values[id]);
      program->firstUse[id] = i;
      program->lastUse[id] = std::max<int64_t>(program->lastUse[id], i);
    }
    // Kernels compute in f32: a narrow (bf16, f16) value is widened into an
    // f32 copy before the step and rounded back (to nearest even) after it,
    // which is the evaluator's rule of rounding each op's result once.
    std::vector<std::pair<Buf, Buf>> loads, stores;
    auto widen = [&](std::vector<Buf> &bufs, bool isResult) {
      for (Buf &b : bufs) {
        if (!isNarrowFloat(b.spec->dtype))
          continue;
        ValueSpec &wide = program->shadowSpecs.emplace_back(*b.spec);
        wide.dtype = DType::F32;
        std::vector<float> &storage =
            program->shadows.emplace_back(wide.numElements());
        Buf f32{reinterpret_cast<char *>(storage.data()), &wide};
        (isResult ? stores : loads).push_back({b, f32});
        b = f32;
      }
    };
    widen(in, false);
    widen(out, true);
    absl::StatusOr<VocabBlock> block = vocabBlock(step, in, out);
    if (!block.ok())
      return absl::Status(block.status().code(),
                          absl::StrCat(bundle_.path, ": program ", name,
                                       ", step ", i, ": ",
                                       block.status().message()));
    absl::StatusOr<Kernel> kernel =
        isCollective(step.op)
            ? bindCollective(step, in, out, options_.comm)
            : bindKernel(
                  step, in, out,
                  [this](const std::string &symbol) -> void * {
                    return library_ ? dlsym(library_, symbol.c_str()) : nullptr;
                  },
                  *block);
    if (kernel.ok() && (!loads.empty() || !stores.empty()))
      kernel = Kernel([inner = std::move(*kernel), loads, stores] {
        for (const auto &[narrow, wide] : loads) {
          size_t width = dtypeSize(narrow.spec->dtype);
          for (int64_t i = 0; i < wide.size(); ++i)
            wide.f()[i] = static_cast<float>(
                decode(reinterpret_cast<uint8_t *>(narrow.data) + i * width,
                       narrow.spec->dtype));
        }
        absl::Status status = inner();
        for (const auto &[narrow, wide] : stores) {
          size_t width = dtypeSize(narrow.spec->dtype);
          for (int64_t i = 0; i < wide.size(); ++i)
            encode(wide.f()[i], narrow.spec->dtype,
                   reinterpret_cast<uint8_t *>(narrow.data) + i * width);
        }
        return status;
      });
    if (!kernel.ok())
      return absl::Status(kernel.status().code(),
                          absl::StrCat(bundle_.path, ": program ", name,
                                       ", step ", i, ": ",
                                       kernel.status().message()));
    program->kernels.push_back(std::move(*kernel));
  }
  for (const auto &[unused, id] : spec.outputs)
    program->lastUse[id] = spec.steps.size();
  for (const auto &[unused, id] : spec.assigns)
    program->lastUse[id] = spec.steps.size();
  programs_[name] = std::move(program);
  return absl::OkStatus();
}

void Executor::initialize(uint64_t seed) {
  deviceParamsStale_ = true;
  hostParamsStale_ = false;
  const MeshSpec &mesh = bundle_.mesh;
  std::vector<ParamFill> fills;
  for (const ParamSpec &p : bundle_.params)
    fills.push_back({p.name,
                     p.init == "ones"      ? ParamInit::Ones
                     : p.init == "normal"  ? ParamInit::Normal
                     : p.init == "uniform" ? ParamInit::Uniform
                                           : ParamInit::Zeros,
                     p.scale, p.shape, mesh.globalShape(p.shape, p.sharding),
                     mesh.blockStart(rank(), p.shape, p.sharding),
                     params_.at(p.name).data()});
  fillParams(seed, fills);
}

absl::StatusOr<std::vector<float>>
Executor::gatherBlocks(const std::vector<float> &local,
                       const std::vector<int64_t> &shape,
                       const Sharding &sharding) {
  return runtime::gatherBlocks(options_.comm, bundle_.mesh, local, shape,
                               sharding);
}

absl::StatusOr<std::vector<float>>
Executor::gatherParam(const std::string &name) {
  const ParamSpec *p = bundle_.param(name);
  if (!p)
    return absl::NotFoundError(absl::StrCat("no parameter '", name, "'"));
  if (absl::Status s = syncHostParams(); !s.ok())
    return s;
  return gatherBlocks(params_.at(name), p->shape, p->sharding);
}

absl::StatusOr<std::vector<float>>
Executor::gatherOutput(const std::string &program, const std::string &name) {
  absl::StatusOr<std::vector<float>> local = output(program, name);
  if (!local.ok())
    return local;
  const ProgramSpec &spec = bundle_.programs.at(program);
  auto sharding = spec.outputShardings.find(name);
  if (sharding == spec.outputShardings.end())
    return local;
  return gatherBlocks(*local, spec.values[*spec.output(name)].shape,
                      sharding->second);
}

absl::Status Executor::load(const SafetensorsFile &file, bool requireAll) {
  if (absl::Status s = syncHostParams(); !s.ok()) // Keep what it lacks.
    return s;
  deviceParamsStale_ = true;
  for (const ParamSpec &p : bundle_.params) {
    // Checkpoints hold whole tensors; a shard takes its block.
    ParamFill block{p.name,
                    ParamInit::Zeros,
                    0,
                    p.shape,
                    bundle_.mesh.globalShape(p.shape, p.sharding),
                    bundle_.mesh.blockStart(rank(), p.shape, p.sharding),
                    params_.at(p.name).data()};
    absl::Status s = readBlock(file, block, p.dtype);
    if (absl::IsNotFound(s) && !(requireAll && !p.state))
      continue;
    if (!s.ok())
      return s;
  }
  return absl::OkStatus();
}

std::vector<float> &Executor::param(const std::string &name) {
  syncHostParams().IgnoreError(); // A failed copy already failed its run.
  deviceParamsStale_ = true;      // The caller may change it.
  return params_.at(name);
}

const std::map<std::string, std::vector<float>> &Executor::params() {
  syncHostParams().IgnoreError();
  return params_;
}

std::string Executor::device() const { return gpu_ ? gpu_->describe() : "cpu"; }

absl::Status Executor::syncHostParams() {
  if (!gpu_ || !hostParamsStale_)
    return absl::OkStatus();
  hostParamsStale_ = false;
  return gpu_->downloadParams(params_);
}

absl::Status Executor::run(const std::string &name,
                           const std::vector<HostTensor> &inputs) {
  auto found = bundle_.programs.find(name);
  if (found == bundle_.programs.end())
    return absl::NotFoundError(
        absl::StrCat(bundle_.path, ": no program '", name, "'"));
  const ProgramSpec &spec = found->second;
  if (inputs.size() != spec.inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("program ", name, " takes ", spec.inputs.size(),
                     " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueSpec &slot = spec.values[spec.inputs[i]];
    if (inputs[i].shape != slot.shape || inputs[i].dtype != slot.dtype)
      return absl::InvalidArgumentError(absl::StrCat(
          "program ", name, ": input ", i, " has the wrong shape or dtype"));
  }
  if (gpu_) {
    std::vector<const void *> data;
    for (const HostTensor &in : inputs)
      data.push_back(in.data);
    if (deviceParamsStale_) {
      if (absl::Status s = gpu_->uploadParams(params_); !s.ok())
        return s;
      deviceParamsStale_ = false;
    }
    hostParamsStale_ = true;
    return gpu_->run(name, data);
  }
  Program &program = *programs_.at(name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buf &slot = program.values[spec.inputs[i]];
    std::memcpy(slot.data, inputs[i].data, slot.spec->bytes());
  }
  for (size_t s = 0; s < program.kernels.size(); ++s) {
    if (absl::Status st = program.kernels[s](); !st.ok())
      return st;
    if (options_.poisonDeadBuffers)
      poison(program, s);
  }
  for (const auto &[param, id] : spec.assigns) {
    const Buf &value = program.values[id];
    std::memcpy(params_.at(param).data(), value.data, value.spec->bytes());
  }
  return absl::OkStatus();
}

void Executor::poison(const Program &program, size_t step) {
  const ProgramSpec &spec = *program.spec;
  for (size_t id = 0; id < spec.values.size(); ++id) {
    const ValueSpec &dead = spec.values[id];
    if (dead.kind != ValueSpec::Kind::Arena ||
        program.lastUse[id] != static_cast<int64_t>(step))
      continue;
    bool shared = false; // Bytes still held by a live value (a view) stay.
    for (size_t other = 0; other < spec.values.size() && !shared; ++other) {
      const ValueSpec &live = spec.values[other];
      shared = other != id && live.kind == ValueSpec::Kind::Arena &&
               program.firstUse[other] <= static_cast<int64_t>(step) &&
               program.lastUse[other] > static_cast<int64_t>(step) &&
               live.offset < dead.offset + dead.bytes() &&
               dead.offset < live.offset + live.bytes();
    }
    if (!shared)
      std::memset(program.values[id].data, 0xff, dead.bytes()); // NaN pattern.
  }
}

absl::StatusOr<std::vector<float>>
Executor::output(const std::string &name, const std::string &out) const {
  if (gpu_)
    return gpu_->output(name, out);
  auto it = programs_.find(name);
  if (it == programs_.end())
    return absl::NotFoundError(absl::StrCat("no program '", name, "'"));
  std::optional<int64_t> id = it->second->spec->output(out);
  if (!id)
    return absl::NotFoundError(
        absl::StrCat("program ", name, " has no output '", out, "'"));
  // Stored in its own type (a bf16 model's gradients are bf16).
  const Buf &b = it->second->values[*id];
  return decodeAll(b.data, b.size(), b.spec->dtype);
}

absl::StatusOr<float> Executor::scalarOutput(const std::string &name,
                                             const std::string &out) const {
  absl::StatusOr<std::vector<float>> all = output(name, out);
  if (!all.ok())
    return all.status();
  return all->empty() ? std::numeric_limits<float>::quiet_NaN() : all->front();
}

} // namespace weft::runtime

//===- sched_executor_test.cpp - bundle v2 on the CPU against v1 ----------===//
//
// The same model and seed compiled twice, to a v1 bundle (the weft graph,
// run by Executor) and to a v2 bundle (the sched module, run by
// SchedExecutor), must train identically: the loss and gradient norm of
// each AdamW step, every parameter and optimizer state tensor after it, and
// the forward program's loss and logits. Both executors call the same
// library math (runtime/exec/CpuMath), the same generated kernels and the
// same OpenBLAS GEMM shapes, so the comparison is to the bit.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "passes/sharding/Passes.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/SchedExecutor.h"
#include "test/compiler/TestUtils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace weft;

namespace {
constexpr int kSteps = 3;

/// A model, how it is compiled and how it is fed.
struct Case {
  Case(std::string model, std::string dtype = "f32", std::string plan = "")
      : model(std::move(model)), dtype(std::move(dtype)),
        plan(std::move(plan)) {}
  std::string model, dtype, plan;
  bool cudaBundle = false; // target=cuda: linear layers as GEMM epilogues.
  int64_t batch = 2, seq = 8;
};

/// What one run of a few steps produced, on one rank.
struct Trace {
  std::vector<float> losses, norms, forwardLoss, logits;
  std::map<std::string, std::vector<float>> params; // Whole (gathered).
  std::string failure;
};

/// Compiles the setup's model (built fresh: the pipeline rewrites it) to a
/// v1 bundle or, with `sched`, to a v2 one, and returns its directory.
std::string compile(const Case &setup, bool sched) {
  auto context = testutil::makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = testutil::buildExampleModel(
      *context, setup.model,
      {setup.batch, setup.seq, setup.dtype, /*masterWeights=*/true});
  if (!module)
    return "";
  TrainingOptions options;
  if (setup.cudaBundle)
    options.cudaArchs = {"sm_90"};
  if (!setup.plan.empty()) {
    auto parsed = parsePlan(setup.plan);
    EXPECT_TRUE(static_cast<bool>(parsed));
    if (!parsed)
      return "";
    options.plan = *parsed;
  }
  std::string dir = testutil::uniqueTempPath(
      setup.model + "-" + setup.dtype + "-" + setup.plan +
      (setup.cudaBundle ? "-cuda" : "") + (sched ? "-v2" : "-v1"));
  bool ok = mlir::succeeded(
      sched
          ? compileSchedBundle(*module, dir, options, llvm::json::Object{})
          : compileTrainingBundle(*module, dir, options, llvm::json::Object{}));
  EXPECT_TRUE(ok) << setup.model << " " << setup.dtype << " " << setup.plan;
  return ok ? dir : "";
}

/// Token ids of step `s` for the rows [first, first + rows) of the batch.
std::vector<int32_t> ids(int s, int64_t first, int64_t rows, int64_t seq,
                         int salt) {
  std::vector<int32_t> out;
  for (int64_t i = first * seq; i < (first + rows) * seq; ++i)
    out.push_back(static_cast<int32_t>((7 * i + 11 * s + salt) % 256));
  return out;
}

/// Trains kSteps steps then runs forward on `exec` (an Executor or a
/// SchedExecutor), this rank's rows of the batch being [first, first+rows).
template <typename Exec>
void train(Exec &exec, int64_t first, int64_t rows, int64_t seq,
           const std::vector<std::string> &names, Trace &trace) {
  auto fail = [&](const absl::Status &s) {
    trace.failure = std::string(s.message());
  };
  exec.initialize(5);
  for (int s = 0; s < kSteps; ++s) {
    std::vector<int32_t> tokens = ids(s, first, rows, seq, 3),
                         labels = ids(s, first, rows, seq, 1);
    float lr = 3e-3f, number = static_cast<float>(s + 1);
    std::vector<runtime::HostTensor> in = {
        {{rows, seq}, runtime::DType::I32, tokens.data()},
        {{rows, seq}, runtime::DType::I32, labels.data()},
        {{}, runtime::DType::F32, &lr},
        {{}, runtime::DType::F32, &number}};
    if (absl::Status st = exec.run("step", in); !st.ok())
      return fail(st);
    trace.losses.push_back(*exec.scalarOutput("step", "loss"));
    trace.norms.push_back(*exec.scalarOutput("step", "grad_norm"));
  }
  std::vector<int32_t> tokens = ids(9, first, rows, seq, 3),
                       labels = ids(9, first, rows, seq, 1);
  if (absl::Status st = exec.run(
          "forward", {{{rows, seq}, runtime::DType::I32, tokens.data()},
                      {{rows, seq}, runtime::DType::I32, labels.data()}});
      !st.ok())
    return fail(st);
  trace.forwardLoss.push_back(*exec.scalarOutput("forward", "loss"));
  auto logits = exec.gatherOutput("forward", "logits");
  if (!logits.ok())
    return fail(logits.status());
  trace.logits = *logits;
  for (const std::string &name : names) {
    auto p = exec.gatherParam(name);
    if (!p.ok())
      return fail(p.status());
    trace.params[name] = *p;
  }
}

/// The largest |a - b| relative to the largest |a| over the elements that
/// differ (0 when every bit is equal; infinite for a NaN or infinity that
/// the other side lacks).
double worst(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0)
      continue;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return diff == 0 ? 0 : diff / std::max(scale, 1e-30);
}

void expectSame(const Trace &v1, const Trace &v2, const std::string &where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(v1.failure, "");
  ASSERT_EQ(v2.failure, "");
  EXPECT_EQ(worst(v1.losses, v2.losses), 0);
  EXPECT_EQ(worst(v1.norms, v2.norms), 0);
  EXPECT_EQ(worst(v1.forwardLoss, v2.forwardLoss), 0);
  EXPECT_EQ(worst(v1.logits, v2.logits), 0);
  EXPECT_EQ(v1.params.size(), v2.params.size());
  for (const auto &[name, want] : v1.params) {
    auto got = v2.params.find(name);
    ASSERT_NE(got, v2.params.end()) << name;
    EXPECT_EQ(worst(want, got->second), 0) << name;
  }
  EXPECT_EQ(v2.losses.size(), static_cast<size_t>(kSteps));
  for (float loss : v2.losses)
    EXPECT_TRUE(std::isfinite(loss));
}

/// A port for a multi-rank job of this process: a store's port stays taken
/// a while after the job that served it, so each job takes the next of 64
/// (below the ephemeral range).
int nextPort() {
  static int jobs = 0;
  return 20000 + static_cast<int>(getpid() % 150) * 64 + jobs++ % 64;
}

/// Runs the v1 bundle (Executor) or the v2 bundle (SchedExecutor) on every
/// rank of its mesh, ranks as threads over Gloo (no communicator for one).
std::vector<Trace> runJob(const Case &setup, const std::string &dir, bool sched,
                          const runtime::MeshSpec &mesh,
                          const std::vector<std::string> &names) {
  int64_t world = mesh.size();
  // dp splits the batch; every other axis sees all of it.
  int dpAxis = mesh.axisIndex("dp");
  int64_t rows = setup.batch / (dpAxis >= 0 ? mesh.sizes[dpAxis] : 1);
  std::vector<Trace> traces(world);
  int port = world > 1 ? nextPort() : 0;
  // Trains rank r's executor over `comm` (null for one rank).
  auto work = [&](int64_t r, runtime::Communicator *comm) {
    Trace &trace = traces[r];
    auto fail = [&](const absl::Status &s) {
      trace.failure = std::string(s.message());
    };
    int64_t first = dpAxis >= 0 ? mesh.coords(r)[dpAxis] * rows : 0;
    if (!sched) {
      runtime::Executor::Options options;
      options.comm = comm;
      auto bundle = runtime::Bundle::load(dir);
      if (!bundle.ok())
        return fail(bundle.status());
      auto exec = runtime::Executor::create(std::move(*bundle), options);
      if (!exec.ok())
        return fail(exec.status());
      return train(**exec, first, rows, setup.seq, names, trace);
    }
    auto bundle = runtime::sched::loadSchedBundle(dir);
    if (!bundle.ok())
      return fail(bundle.status());
    runtime::SchedExecutor::Options options;
    options.comm = comm;
    auto exec = runtime::SchedExecutor::create(std::move(*bundle), options);
    if (!exec.ok())
      return fail(exec.status());
    train(**exec, first, rows, setup.seq, names, trace);
  };
  auto rank = [&](int64_t r) {
    if (world == 1)
      return work(r, nullptr);
    runtime::RankInfo info;
    info.rank = r, info.worldSize = world, info.masterPort = port;
    auto comm = runtime::Communicator::create(info, std::chrono::seconds(60));
    if (!comm.ok()) {
      traces[r].failure = std::string(comm.status().message());
      return;
    }
    work(r, comm->get());
    // No rank closes its connections while another may still use them.
    (*comm)->barrier().IgnoreError();
  };
  std::vector<std::thread> others;
  for (int64_t r = 1; r < world; ++r)
    others.emplace_back(rank, r);
  rank(0);
  for (std::thread &t : others)
    t.join();
  return traces;
}

/// v1 and v2 of the setup from the same seed, on every rank of its plan,
/// compared to the bit.
void checkSameTraining(const Case &setup) {
  SCOPED_TRACE(setup.model + " " + setup.dtype + " " + setup.plan +
               (setup.cudaBundle ? " cuda" : ""));
  std::string v1Dir = compile(setup, false), v2Dir = compile(setup, true);
  ASSERT_FALSE(v1Dir.empty());
  ASSERT_FALSE(v2Dir.empty());
  auto bundle = runtime::sched::loadSchedBundle(v2Dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  std::vector<std::string> names; // Parameters and optimizer state.
  for (const auto &p : bundle->params)
    names.push_back(p.name);
  runtime::MeshSpec mesh;
  if (bundle->mesh) {
    mesh.axes = bundle->mesh->axes;
    mesh.sizes = bundle->mesh->sizes;
  }
  std::vector<Trace> v1 = runJob(setup, v1Dir, false, mesh, names);
  std::vector<Trace> v2 = runJob(setup, v2Dir, true, mesh, names);
  for (size_t r = 0; r < v1.size(); ++r)
    expectSame(v1[r], v2[r], "rank " + std::to_string(r));
  EXPECT_GT(v1[0].params.size(), 10u);
}
} // namespace

TEST(SchedExecutor, Gpt2TinyTrainsLikeTheV1Executor) {
  checkSameTraining(Case("gpt2-tiny"));
}
TEST(SchedExecutor, LlamaTinyTrainsLikeTheV1Executor) {
  checkSameTraining(Case("llama-tiny"));
}
TEST(SchedExecutor, MixtralTinyTrainsLikeTheV1Executor) {
  checkSameTraining(Case("mixtral-tiny"));
}
// 100 positions span two 64-wide attention tiles, causal mask included.
TEST(SchedExecutor, LongSequencesTrainLikeTheV1Executor) {
  Case setup("llama-tiny");
  setup.batch = 1, setup.seq = 100;
  checkSameTraining(setup);
}
// bf16 compute with f32 master weights: v1 widens narrow values around each
// kernel, v2 runs the compiler's copies; both round to nearest even once
// per op.
TEST(SchedExecutor, Gpt2TinyBf16TrainsLikeTheV1Executor) {
  checkSameTraining(Case("gpt2-tiny", "bf16"));
}
TEST(SchedExecutor, LlamaTinyBf16TrainsLikeTheV1Executor) {
  checkSameTraining(Case("llama-tiny", "bf16"));
}
TEST(SchedExecutor, MixtralTinyBf16TrainsLikeTheV1Executor) {
  checkSameTraining(Case("mixtral-tiny", "bf16"));
}
// A bundle planned for the GPU: its linear layers are GEMMs with bias,
// bias+GELU and dGELU epilogues, which the CPU runs as sgemm and a loop.
TEST(SchedExecutor, GemmEpiloguesTrainLikeTheV1Executor) {
  Case setup("gpt2-tiny");
  setup.cudaBundle = true;
  checkSameTraining(setup);
}
// Ranks as threads over Gloo: gradient all-reduces over dp; ZeRO-3's
// parameter all-gathers and gradient reduce-scatters; Megatron tp with the
// vocabulary-parallel embedding and cross-entropy; both axes at once
// (GPT-2's tp also slices replicated tensors with by_rank copies).
TEST(SchedExecutor, DataParallelOnTwoRanksTrainsLikeTheV1Executor) {
  checkSameTraining(Case("gpt2-tiny", "f32", "dp=2"));
}
TEST(SchedExecutor, Zero3OnTwoRanksTrainsLikeTheV1Executor) {
  checkSameTraining(Case("gpt2-tiny", "f32", "dp=2,zero=3"));
}
TEST(SchedExecutor, TensorParallelOnTwoRanksTrainsLikeTheV1Executor) {
  checkSameTraining(Case("llama-tiny", "f32", "tp=2"));
}
TEST(SchedExecutor, DataAndTensorParallelOnFourRanksTrainsLikeTheV1Executor) {
  Case setup("gpt2-tiny", "f32", "dp=2,tp=2");
  setup.batch = 4;
  checkSameTraining(setup);
}

// A checkpoint of trained parameters and state loads back to the bit over
// a differently initialised executor; a missing parameter is named.
TEST(SchedExecutor, LoadsACheckpoint) {
  std::string dir = compile(Case("llama-tiny"), true);
  ASSERT_FALSE(dir.empty());
  auto open = [&]() {
    auto bundle = runtime::sched::loadSchedBundle(dir);
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    return runtime::SchedExecutor::create(std::move(*bundle), {});
  };
  auto trained = open();
  ASSERT_TRUE(trained.ok()) << trained.status();
  std::vector<std::string> names;
  for (const auto &p : (*trained)->bundle().params)
    names.push_back(p.name);
  Trace trace;
  train(**trained, 0, 2, 8, names, trace);
  ASSERT_EQ(trace.failure, "");
  std::vector<runtime::TensorToWrite> tensors;
  for (const auto &p : (*trained)->bundle().params) {
    const std::vector<float> &v = trace.params.at(p.name);
    tensors.push_back({p.name, runtime::DType::F32, p.type.shape,
                       std::vector<double>(v.begin(), v.end())});
  }
  std::string path = testutil::uniqueTempPath("checkpoint.safetensors");
  ASSERT_TRUE(runtime::writeSafetensors(path, tensors).ok());
  auto file = runtime::SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto loaded = open();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  (*loaded)->initialize(77);
  ASSERT_TRUE((*loaded)->load(*file, /*requireAll=*/true).ok());
  for (const std::string &name : names)
    EXPECT_EQ(worst(trace.params.at(name), *(*loaded)->param(name)), 0) << name;
  tensors.erase(tensors.begin());
  ASSERT_TRUE(runtime::writeSafetensors(path, tensors).ok());
  absl::Status missing =
      (*loaded)->load(*runtime::SafetensorsFile::read(path), true);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no tensor named '" + names.front() + "'"),
            std::string::npos)
      << missing;
}

namespace {
/// A one-program bundle written by hand (no kernel library), for what the
/// compiled models do not reach.
absl::StatusOr<std::unique_ptr<runtime::SchedExecutor>>
handWritten(const std::string &manifest,
            runtime::Communicator *comm = nullptr) {
  std::string dir = testutil::uniqueTempPath("hand-v2");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/manifest.json") << manifest;
  auto bundle = runtime::sched::loadSchedBundle(dir);
  if (!bundle.ok())
    return bundle.status();
  runtime::SchedExecutor::Options options;
  options.comm = comm;
  return runtime::SchedExecutor::create(std::move(*bundle), options);
}
} // namespace

// A transposing copy that rounds to bf16 (ties to even), a max over a
// dimension given a GPU scratch (which the CPU ignores), a fill, and an
// event pair that does nothing on one stream.
TEST(SchedExecutor, RunsCopiesReductionsAndFillsAsWritten) {
  auto exec = handWritten(R"json({
 "format": "weft-bundle", "version": 2, "meta": {}, "kernels": {},
 "params": [], "constants": [], "kernel_decls": [],
 "programs": [
  {"name": "p", "arena": 192, "align": 64, "events": 1,
   "streams": ["compute", "comm"],
   "inputs": [{"shape": [2, 3], "dtype": "f32"}],
   "buffers": [
    {"kind": "input", "index": 0, "shape": [2, 3], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 0, "last": 5, "shape": [3, 2], "dtype": "bf16"},
    {"kind": "alloc", "offset": 64, "first": 1, "last": 5, "shape": [3], "dtype": "f32"},
    {"kind": "alloc", "offset": 128, "first": 4, "last": 5, "shape": [2], "dtype": "f32"},
    {"kind": "alloc", "offset": 128, "first": 1, "last": 1, "shape": [6], "dtype": "f32"}],
   "instructions": [
    {"op": "copy", "stream": "compute", "operands": [0, 1],
     "sizes": [3, 2], "src": [0, 1, 3], "dst": [0, 2, 1]},
    {"op": "reduce", "stream": "compute", "operands": [0, 2, 4],
     "reduction": "max", "dims": [0], "has_scratch": true},
    {"op": "record", "stream": "compute", "operands": [], "event": 0},
    {"op": "wait", "stream": "comm", "operands": [], "event": 0},
    {"op": "fill", "stream": "comm", "operands": [3], "value": 2.5}],
   "assigns": [],
   "outputs": [{"name": "t", "buffer": 1}, {"name": "m", "buffer": 2},
               {"name": "f", "buffer": 3}]}],
 "schedules": []
})json");
  ASSERT_TRUE(exec.ok()) << exec.status();
  // 1 + 2^-8 and 1 + 3 * 2^-8 are halfway between bf16 neighbours.
  std::vector<float> x = {1.00390625f, -2, 3, 1.01171875f, 5, -6};
  ASSERT_TRUE(
      (*exec)->run("p", {{{2, 3}, runtime::DType::F32, x.data()}}).ok());
  EXPECT_EQ(*(*exec)->output("p", "t"),
            (std::vector<float>{1, 1.015625f, -2, 5, 3, -6}));
  EXPECT_EQ(*(*exec)->output("p", "m"),
            (std::vector<float>{1.01171875f, 5, 3}));
  EXPECT_EQ(*(*exec)->output("p", "f"), (std::vector<float>{2.5f, 2.5f}));
  // The caller's input is checked against the program's.
  absl::Status wrong =
      (*exec)->run("p", {{{3, 2}, runtime::DType::F32, x.data()}});
  EXPECT_NE(wrong.message().find("input 0 has the wrong shape"),
            std::string::npos)
      << wrong;
}

// Point-to-point needs a Communicator that has it: the run stops at the
// instruction, naming it (on both ranks of a two-stage pipeline).
TEST(SchedExecutor, SendIsUnimplementedAndNamed) {
  const char *manifest = R"json({
 "format": "weft-bundle", "version": 2, "meta": {}, "kernels": {},
 "mesh": {"name": "mesh", "axes": ["pp"], "sizes": [2]},
 "params": [], "constants": [], "kernel_decls": [],
 "programs": [
  {"name": "stage", "arena": 64, "align": 64, "events": 0,
   "streams": ["compute"],
   "inputs": [{"shape": [4], "dtype": "f32"}],
   "buffers": [
    {"kind": "input", "index": 0, "shape": [4], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 0, "last": 2, "shape": [4], "dtype": "f32"}],
   "instructions": [
    {"op": "fill", "stream": "compute", "operands": [1], "value": 1},
    {"op": "send", "stream": "compute", "operands": [1], "axis": "pp",
     "delta": 1, "tag": 7}],
   "assigns": [], "outputs": [{"name": "y", "buffer": 1}]}],
 "schedules": []
})json";
  // Without a communicator a two-rank bundle is refused up front.
  auto alone = handWritten(manifest);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("placed on 2 ranks"),
            std::string::npos)
      << alone.status();
  std::vector<absl::Status> results(2);
  int port = nextPort();
  auto rank = [&](int r) {
    runtime::RankInfo info;
    info.rank = r, info.worldSize = 2, info.masterPort = port;
    auto comm = runtime::Communicator::create(info, std::chrono::seconds(60));
    if (!comm.ok()) {
      results[r] = comm.status();
      return;
    }
    auto exec = handWritten(manifest, comm->get());
    if (!exec.ok()) {
      results[r] = exec.status();
      return;
    }
    std::vector<float> x(4);
    results[r] = (*exec)->run("stage", {{{4}, runtime::DType::F32, x.data()}});
    // Neither rank closes its connections while the other may still use
    // them.
    (*comm)->barrier().IgnoreError();
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  for (const absl::Status &s : results) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("program stage, instruction 1 (send): along "
                               "'pp' offset 1 tag 7: point-to-point"),
              std::string::npos)
        << s;
  }
}

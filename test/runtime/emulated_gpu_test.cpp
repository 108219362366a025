//===- emulated_gpu_test.cpp - the GPU runtime against the CPU runtime ----===//
//
// GpuBackend trains GPT-2-tiny and Llama-tiny (f32 and bf16) on
// EmulatedGpu: the same plans, argument blobs, CUDA kernel sources and
// graph replay as on a GPU, with host memory and C++-compiled kernels. The
// losses and every parameter after three AdamW steps must match the CPU
// runtime's. The GpuTraining tests run the same on a real GPU where there is
// one (else they skip); timing is bench/gpu/run.sh's.
//
//===----------------------------------------------------------------------===//

#include "codegen/Bundle.h"
#include "compiler/Pipeline.h"
#include "passes/memory/Passes.h"
#include "passes/sharding/Passes.h"
#include "runtime/exec/Executor.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/GpuBackend.h"
#include "runtime/gpu/GpuPlan.h"
#include "test/compiler/TestUtils.h"
#include "test/runtime/EmulatedGpu.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

using namespace weft;

namespace {
/// GPU 0's architecture, or "" where there is none.
std::string gpuArch() {
  auto device = runtime::CudaDevice::open(0);
  return device.ok() ? (*device)->arch() : "";
}

std::string compileCudaBundle(const std::string &model,
                              const std::string &dtype, bool real) {
  TrainingOptions options;
  // The emulated device is an sm_90; a real one is what it is.
  options.cudaArchs = {real ? gpuArch() : "sm_90"};
  // As in the CPU parity tests: with eps 1e-8, a gradient that cancels to
  // ~1e-10 (a key bias's is zero in exact arithmetic) turns a different
  // summation order into a full +-lr step; 1e-4 keeps such noise small.
  options.adamw.eps = 1e-4;
  options.keepGradients = true; // The train_step program: loss, gradients.
  return testutil::compileExampleBundle(model, dtype, options);
}

/// An emulated GPU with the bundle's kernels and the runtime's loaded.
std::unique_ptr<testutil::EmulatedGpu> emulatedGpuFor(const std::string &dir) {
  auto gpu = std::make_unique<testutil::EmulatedGpu>();
  std::vector<std::pair<std::string, std::string>> sources = {
      {runtime::gpuOpsSource(), "ops"},
      {runtime::gpuAttentionSource(), "attention"}};
  // A bundle without generated kernels (no weft.fused) has no kernels.cu.
  if (std::ifstream in(dir + "/kernels.cu"); in) {
    std::stringstream generated;
    generated << in.rdbuf();
    sources.push_back({generated.str(), "kernels"});
  }
  for (const auto &[source, label] : sources) {
    absl::Status s = gpu->load(source, label, dir);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok())
      return nullptr;
  }
  return gpu;
}

struct Training {
  runtime::Bundle bundle;
  std::unique_ptr<runtime::Executor> cpu;
  std::unique_ptr<runtime::GpuBackend> gpu;
  testutil::EmulatedGpu *device = nullptr;
};

/// Starts the CPU runtime and the GPU runtime, on GPU 0 with `real`, else
/// on an emulated device, from the same bundle and initial parameters.
void start(Training &run, const std::string &dir,
           runtime::GpuBackend::Options options, bool real,
           bool refuseGraphs = false) {
  auto bundle = runtime::Bundle::load(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  run.bundle = *bundle;
  auto cpu = runtime::Executor::create(std::move(*bundle));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  run.cpu = std::move(*cpu);
  run.cpu->initialize(5);
  absl::StatusOr<std::unique_ptr<runtime::GpuBackend>> gpu;
  if (real) {
    gpu = runtime::GpuBackend::create(run.bundle, run.cpu->params(), options);
  } else {
    std::unique_ptr<testutil::EmulatedGpu> device = emulatedGpuFor(dir);
    ASSERT_TRUE(device);
    run.device = device.get();
    if (refuseGraphs)
      device->refuseGraphs();
    auto gemm = std::make_unique<testutil::HostGemm>(*device);
    gpu = runtime::GpuBackend::createOn(run.bundle, run.cpu->params(), options,
                                        std::move(device), std::move(gemm));
  }
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  run.gpu = std::move(*gpu);
  ASSERT_TRUE(run.gpu->uploadParams(run.cpu->params()).ok());
}

/// One AdamW step (lr 1e-3) on both runtimes; their losses must agree.
void stepBoth(Training &run, std::vector<int32_t> &tokens,
              std::vector<int32_t> &labels, int step, double tolerance) {
  float lr = 1e-3f, number = static_cast<float>(step);
  ASSERT_TRUE(run.cpu
                  ->run("step", {{{2, 16}, runtime::DType::I32, tokens.data()},
                                 {{2, 16}, runtime::DType::I32, labels.data()},
                                 {{}, runtime::DType::F32, &lr},
                                 {{}, runtime::DType::F32, &number}})
                  .ok());
  absl::Status s =
      run.gpu->run("step", {tokens.data(), labels.data(), &lr, &number});
  ASSERT_TRUE(s.ok()) << s;
  float cpuLoss = *run.cpu->scalarOutput("step", "loss");
  absl::StatusOr<std::vector<float>> gpuLoss = run.gpu->output("step", "loss");
  ASSERT_TRUE(gpuLoss.ok()) << gpuLoss.status();
  EXPECT_NEAR(gpuLoss->at(0), cpuLoss, tolerance * std::fabs(cpuLoss))
      << "step " << step;
}

void checkTraining(const std::string &model, const std::string &dtype,
                   double tolerance, bool fusedAttention = false,
                   bool real = false) {
  SCOPED_TRACE(model + " " + dtype + (fusedAttention ? " fused" : ""));
  Training run;
  runtime::GpuBackend::Options options;
  if (fusedAttention) // Else attention runs as cuBLASLt GEMMs (small here).
    options.plan.attentionScratchBytes = 0;
  start(run, compileCudaBundle(model, dtype, real), options, real);
  if (::testing::Test::HasFatalFailure())
    return;
  int64_t vocab = 256; // Both tiny models' (the bundle's meta is not set here).
  std::mt19937 rng(9);
  // Relative to the tensor's largest magnitude.
  auto worstError = [](const std::vector<float> &want,
                       const std::vector<float> &got) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
      worst = std::max(worst, std::fabs(static_cast<double>(want[i]) - got[i]));
    }
    return worst / std::max(scale, 1e-6);
  };
  // Every gradient of the first batch, before any update. bf16 gradients
  // are themselves rounded to bf16: two of its ulps (2^-6) near the tensor's
  // largest element, where summation order decides the last bit.
  double gradTolerance = dtype == "bf16" ? 1.0 / 64 : tolerance;
  {
    std::vector<int32_t> tokens(32), labels(32);
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<int32_t>((7 * i + 3) % vocab);
      labels[i] = static_cast<int32_t>((5 * i + 1) % vocab);
    }
    ASSERT_TRUE(
        run.cpu
            ->run("train_step", {{{2, 16}, runtime::DType::I32, tokens.data()},
                                 {{2, 16}, runtime::DType::I32, labels.data()}})
            .ok());
    absl::Status s = run.gpu->run("train_step", {tokens.data(), labels.data()});
    ASSERT_TRUE(s.ok()) << s;
    for (const auto &[name, id] :
         run.bundle.programs.at("train_step").outputs) {
      absl::StatusOr<std::vector<float>> want =
          run.cpu->output("train_step", name);
      absl::StatusOr<std::vector<float>> got =
          run.gpu->output("train_step", name);
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_LE(worstError(*want, *got), gradTolerance) << name;
    }
  }
  for (int step = 1; step <= 3; ++step) {
    std::vector<int32_t> tokens(32), labels(32);
    for (int32_t &t : tokens)
      t = static_cast<int32_t>(rng() % vocab);
    for (int32_t &t : labels)
      t = static_cast<int32_t>(rng() % vocab);
    stepBoth(run, tokens, labels, step, tolerance);
  }
  // Steps 2 and 3 replayed the graph recorded on step 2.
  if (run.device)
    EXPECT_EQ(run.device->replays(), 2);
  // Attention through GEMMs rounds the probabilities to bf16 before P V, as
  // FlashAttention does, where the CPU keeps them f32: gradients differ by
  // under 1% (checked above), but Adam moves a small bias by about lr per
  // step whatever its gradient's size, so a bias whose gradient is near zero
  // lands up to ~8% of the tensor's scale apart after three steps.
  double paramTolerance = dtype == "bf16" && !fusedAttention ? 1e-1 : tolerance;
  std::map<std::string, std::vector<float>> gpuParams = run.cpu->params();
  ASSERT_TRUE(run.gpu->downloadParams(gpuParams).ok());
  for (const auto &[name, cpu] : run.cpu->params()) {
    // In bf16 a gradient's last bit depends on summation order, and Adam's
    // moments carry that bit; the parameters are what must agree.
    if (dtype == "bf16" && run.bundle.param(name)->state)
      continue;
    EXPECT_LE(worstError(cpu, gpuParams.at(name)), paramTolerance) << name;
  }
}
} // namespace

TEST(EmulatedGpu, Gpt2TinyF32TrainsLikeTheCpu) {
  checkTraining("gpt2-tiny", "f32", 1e-4);
}

TEST(EmulatedGpu, LlamaTinyF32TrainsLikeTheCpu) {
  checkTraining("llama-tiny", "f32", 1e-4);
}

TEST(EmulatedGpu, Gpt2TinyBf16TrainsLikeTheCpu) {
  checkTraining("gpt2-tiny", "bf16", 1e-2);
}

TEST(EmulatedGpu, LlamaTinyBf16TrainsLikeTheCpu) {
  checkTraining("llama-tiny", "bf16", 1e-2);
}

// Mixture of experts: top-k gating, capacity slots, dispatch and combine.
TEST(EmulatedGpu, MixtralTinyF32TrainsLikeTheCpu) {
  checkTraining("mixtral-tiny", "f32", 1e-4);
}

TEST(EmulatedGpu, Gpt2TinyF32WithFusedAttentionTrainsLikeTheCpu) {
  checkTraining("gpt2-tiny", "f32", 1e-4, /*fusedAttention=*/true);
}

TEST(EmulatedGpu, LlamaTinyBf16WithFusedAttentionTrainsLikeTheCpu) {
  checkTraining("llama-tiny", "bf16", 1e-2, /*fusedAttention=*/true);
}

TEST(EmulatedGpu, RunsLaunchByLaunchWhenGraphCaptureFails) {
  Training run;
  start(run, compileCudaBundle("gpt2-tiny", "f32", false), {}, false,
        /*refuseGraphs=*/true);
  if (::testing::Test::HasFatalFailure())
    return;
  std::vector<int32_t> tokens(32, 3), labels(32, 4);
  for (int step = 1; step <= 3; ++step)
    stepBoth(run, tokens, labels, step, 1e-4);
  EXPECT_EQ(run.device->replays(), 0);
}

TEST(EmulatedGpu, ATokenIdOutOfRangeIsReportedWithItsStep) {
  Training run;
  start(run, compileCudaBundle("gpt2-tiny", "f32", false), {}, false);
  if (::testing::Test::HasFatalFailure())
    return;
  std::vector<int32_t> tokens(32, 1), labels(32, 1);
  tokens[5] = 100000;
  float lr = 1e-3f, number = 1;
  absl::Status s =
      run.gpu->run("step", {tokens.data(), labels.data(), &lr, &number});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  std::string message(s.message());
  EXPECT_NE(message.find("weft.embedding: token id 100000 at position 5"),
            std::string::npos)
      << message;
}

// The same on a real GPU (skipped, saying why, where there is none).
#define WEFT_GPU_OR_SKIP()                                                     \
  if (auto d = runtime::CudaDevice::open(0); !d.ok())                          \
  GTEST_SKIP() << "GPU test skipped: " << d.status().message()

TEST(GpuTraining, Gpt2TinyF32MatchesTheCpu) {
  WEFT_GPU_OR_SKIP();
  checkTraining("gpt2-tiny", "f32", 1e-4, false, /*real=*/true);
}

TEST(GpuTraining, LlamaTinyF32MatchesTheCpu) {
  WEFT_GPU_OR_SKIP();
  checkTraining("llama-tiny", "f32", 1e-4, false, /*real=*/true);
}

TEST(GpuTraining, Gpt2TinyBf16MatchesTheCpu) {
  WEFT_GPU_OR_SKIP();
  checkTraining("gpt2-tiny", "bf16", 1e-2, false, /*real=*/true);
}

TEST(GpuTraining, LlamaTinyBf16WithFusedAttentionMatchesTheCpu) {
  WEFT_GPU_OR_SKIP();
  checkTraining("llama-tiny", "bf16", 1e-2, /*fusedAttention=*/true,
                /*real=*/true);
}

namespace {
/// One rank of a two-rank job, ranks as threads talking through Gloo: its
/// communicator, and the CPU runtime (parameters initialized from seed 5)
/// and the GPU runtime on an emulated device of `dir`'s bundle.
struct EmulatedRank {
  std::unique_ptr<runtime::Communicator> comm;
  std::unique_ptr<runtime::Executor> cpu;
  std::unique_ptr<testutil::HostCollectives> collectives;
  std::unique_ptr<runtime::GpuBackend> gpu;
  runtime::Bundle bundle;
};

/// A port for a two-rank job of this process: a store's port stays taken a
/// while after the job that served it, so each job takes the next.
int nextPort() {
  static int jobs = 0;
  return 36000 + static_cast<int>(getpid() % 1000) * 8 + jobs++ % 8;
}

/// A bundle of the hand-written program @run in `ir` (memory planned, no
/// generated kernels), in a fresh directory named after `label`.
std::string handWrittenBundle(const char *ir, const std::string &label) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, ir);
  if (!module)
    return "";
  planMemory(testutil::firstFunc(*module));
  std::string dir = testutil::uniqueTempPath(label + "-bundle");
  EXPECT_TRUE(mlir::succeeded(
      codegen::writeBundle(*module, {"run"}, dir, llvm::json::Object{})));
  return dir;
}

absl::StatusOr<EmulatedRank> openRank(int r, int port, const std::string &dir) {
  EmulatedRank rank;
  runtime::RankInfo info;
  info.rank = r, info.worldSize = 2, info.masterPort = port;
  auto comm = runtime::Communicator::create(info, std::chrono::seconds(60));
  if (!comm.ok())
    return comm.status();
  rank.comm = std::move(*comm);
  auto bundle = runtime::Bundle::load(dir);
  if (!bundle.ok())
    return bundle.status();
  rank.bundle = *bundle;
  runtime::Executor::Options cpuOptions;
  cpuOptions.comm = rank.comm.get(); // Opens the groups; initializes shards.
  auto cpu = runtime::Executor::create(std::move(*bundle), cpuOptions);
  if (!cpu.ok())
    return cpu.status();
  rank.cpu = std::move(*cpu);
  rank.cpu->initialize(5);
  std::unique_ptr<testutil::EmulatedGpu> device = emulatedGpuFor(dir);
  if (!device)
    return absl::InternalError("no emulated device");
  rank.collectives =
      std::make_unique<testutil::HostCollectives>(*device, *rank.comm);
  auto gemm = std::make_unique<testutil::HostGemm>(*device);
  runtime::GpuBackend::Options options;
  options.plan.rank = r;
  options.collectives = rank.collectives.get();
  auto gpu =
      runtime::GpuBackend::createOn(rank.bundle, rank.cpu->params(), options,
                                    std::move(device), std::move(gemm));
  if (!gpu.ok())
    return gpu.status();
  rank.gpu = std::move(*gpu);
  return rank;
}

/// Trains `model` placed by `plan` for three steps on two emulated GPUs,
/// ranks as threads talking through Gloo, and compares with one CPU rank
/// training the unplaced model on the same global batches.
void checkPlacedTraining(const std::string &model, const std::string &plan) {
  SCOPED_TRACE(model + " " + plan);
  auto compile = [&](const std::string &spec) {
    TrainingOptions options;
    options.cudaArchs = {"sm_90"};
    options.adamw.eps = 1e-4; // As compileCudaBundle says.
    if (!spec.empty()) {
      auto parsed = parsePlan(spec);
      EXPECT_TRUE(static_cast<bool>(parsed));
      if (parsed)
        options.plan = *parsed;
    }
    return testutil::compileExampleBundle(model, "f32", options,
                                          spec.empty() ? "-whole" : "-placed");
  };
  std::string whole = compile(""), placed = compile(plan);
  // The single-rank reference, on the CPU.
  auto reference = runtime::Executor::create(*runtime::Bundle::load(whole));
  ASSERT_TRUE(reference.ok()) << reference.status();
  (*reference)->initialize(5);
  // Kernels compiled once, before the ranks start.
  ASSERT_TRUE(emulatedGpuFor(placed));
  std::vector<std::vector<int32_t>> tokens(3), labels(3);
  for (int step = 0; step < 3; ++step)
    for (int i = 0; i < 32; ++i) {
      tokens[step].push_back((7 * i + 11 * step + 3) % 256);
      labels[step].push_back((5 * i + 13 * step + 1) % 256);
    }
  std::vector<float> wantLoss;
  for (int step = 0; step < 3; ++step) {
    float lr = 1e-3f, number = static_cast<float>(step + 1);
    ASSERT_TRUE(
        (*reference)
            ->run("step", {{{2, 16}, runtime::DType::I32, tokens[step].data()},
                           {{2, 16}, runtime::DType::I32, labels[step].data()},
                           {{}, runtime::DType::F32, &lr},
                           {{}, runtime::DType::F32, &number}})
            .ok());
    wantLoss.push_back(*(*reference)->scalarOutput("step", "loss"));
  }
  int port = nextPort();
  std::vector<std::string> failures(2);
  std::vector<std::vector<float>> losses(2);
  std::vector<std::map<std::string, std::vector<float>>> params(2);
  auto rank = [&](int r) {
    auto fail = [&](const absl::Status &s) {
      failures[r] = std::string(s.message());
    };
    absl::StatusOr<EmulatedRank> opened = openRank(r, port, placed);
    if (!opened.ok())
      return fail(opened.status());
    runtime::Executor *cpu = opened->cpu.get();
    runtime::GpuBackend *gpu = opened->gpu.get();
    const runtime::Bundle &kept = opened->bundle;
    if (absl::Status s = gpu->uploadParams(cpu->params()); !s.ok())
      return fail(s);
    // This rank's rows of the global batch (dp splits the batch).
    const runtime::ProgramSpec &step = kept.programs.at("step");
    const runtime::ValueSpec &input = step.values[step.inputs[0]];
    int64_t rows = input.shape[0],
            first = kept.mesh.blockStart(r, input.shape, input.sharding)[0];
    for (int s = 0; s < 3; ++s) {
      float lr = 1e-3f, number = static_cast<float>(s + 1);
      const int32_t *t = tokens[s].data() + first * 16,
                    *l = labels[s].data() + first * 16;
      if (absl::Status st = gpu->run("step", {t, l, &lr, &number}); !st.ok())
        return fail(st);
      losses[r].push_back(gpu->output("step", "loss")->at(0));
    }
    params[r] = cpu->params();
    if (absl::Status s = gpu->downloadParams(params[r]); !s.ok())
      return fail(s);
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(failures[r], "") << "rank " << r;
    for (int s = 0; s < 3; ++s)
      EXPECT_NEAR(losses[r][s], wantLoss[s], 1e-4 * wantLoss[s])
          << "rank " << r << ", step " << s + 1;
  }
  // Every rank's parameters (whole, or its ZeRO shard) against the
  // reference's, block by block. (Optimizer state is left out: a ZeRO
  // bundle declares its state tensors' local shapes but not how they
  // split, so their blocks cannot be found; the parameters they moved are.)
  runtime::Bundle kept = *runtime::Bundle::load(placed);
  for (int r = 0; r < 2; ++r)
    for (const runtime::ParamSpec &p : kept.params) {
      if (p.state)
        continue;
      const std::vector<float> &want = (*reference)->params().at(p.name);
      const std::vector<float> &got = params[r].at(p.name);
      double scale = 0, worst = 0;
      runtime::forEachInBlock(
          p.shape, kept.mesh.globalShape(p.shape, p.sharding),
          kept.mesh.blockStart(r, p.shape, p.sharding),
          [&](int64_t i, int64_t g) {
            scale = std::max(scale, std::fabs(static_cast<double>(want[g])));
            worst = std::max(worst,
                             std::fabs(static_cast<double>(want[g]) - got[i]));
          });
      EXPECT_LE(worst, 1e-4 * std::max(scale, 1e-6))
          << "rank " << r << ": " << p.name;
    }
}
} // namespace

TEST(EmulatedGpu, DataParallelOnTwoRanksTrainsLikeOneCpuRank) {
  checkPlacedTraining("gpt2-tiny", "dp=2");
}

// ZeRO-3: parameters gathered per use (all_gather), gradients
// reduce-scattered, optimizer state and masters in shards.
TEST(EmulatedGpu, Zero3OnTwoRanksTrainsLikeOneCpuRank) {
  checkPlacedTraining("gpt2-tiny", "dp=2,zero=3");
}

// Megatron tensor parallelism: split attention heads and MLP, f/g
// all-reduces, and the vocabulary-parallel embedding and cross-entropy
// (row max and sums all-reduced across the two ranks' columns).
TEST(EmulatedGpu, TensorParallelOnTwoRanksTrainsLikeOneCpuRank) {
  checkPlacedTraining("llama-tiny", "tp=2");
}

// The two ops no compiled model here has: weft.dropout (its mask from the
// counter-based uniform the CPU shares) and weft.all_to_all (expert
// parallelism's exchange), in a hand-written program on two emulated GPUs,
// ranks as threads, against the CPU runtime on the same ranks: equal to the
// bit.
TEST(EmulatedGpu, DropoutAndAllToAllMatchTheCpuOnTwoRanks) {
  std::string dir = handWrittenBundle(R"mlir(
    weft.mesh @mesh axes ["ep"] sizes [2]
    func.func @run(%x: tensor<4x6xf32>)
        -> (tensor<4x6xf32> {weft.output = "dropped"},
            tensor<2x12xf32> {weft.output = "swapped"}) {
      %d = weft.dropout %x {rate = 0.25 : f64, seed = 7 : i64} : tensor<4x6xf32>
      %a = weft.all_to_all %x over @mesh ["ep"] split 0 concat 1
          : tensor<4x6xf32> -> tensor<2x12xf32>
      return %d, %a : tensor<4x6xf32>, tensor<2x12xf32>
    }
  )mlir",
                                      "dropout-all-to-all");
  ASSERT_FALSE(dir.empty());
  ASSERT_TRUE(emulatedGpuFor(dir));

  int port = nextPort();
  std::vector<std::string> failures(2);
  // By rank: each output from the CPU, then from the GPU.
  std::vector<std::map<std::string, std::vector<float>>> cpuOut(2), gpuOut(2);
  auto rank = [&](int r) {
    auto fail = [&](const absl::Status &s) {
      failures[r] = std::string(s.message());
    };
    std::vector<float> x(24);
    for (int i = 0; i < 24; ++i)
      x[i] = static_cast<float>(100 * r + i) / 7.0f;
    absl::StatusOr<EmulatedRank> opened = openRank(r, port, dir);
    if (!opened.ok())
      return fail(opened.status());
    runtime::Executor *cpu = opened->cpu.get();
    runtime::GpuBackend *gpu = opened->gpu.get();
    if (absl::Status s =
            cpu->run("run", {{{4, 6}, runtime::DType::F32, x.data()}});
        !s.ok())
      return fail(s);
    if (absl::Status s = gpu->run("run", {x.data()}); !s.ok())
      return fail(s);
    for (const char *name : {"dropped", "swapped"}) {
      auto c = cpu->output("run", name);
      auto g = gpu->output("run", name);
      if (!c.ok() || !g.ok())
        return fail(c.ok() ? g.status() : c.status());
      cpuOut[r][name] = *c;
      gpuOut[r][name] = *g;
    }
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(failures[r], "") << "rank " << r;
    EXPECT_EQ(gpuOut[r], cpuOut[r]) << "rank " << r;
    // Rank r's rows r*2..r*2+1 of the swap hold each rank's block r side
    // by side: element (i, 6 j + k) is rank j's x[2 r + i, k].
    const std::vector<float> &swapped = cpuOut[r]["swapped"];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 6; ++k)
          EXPECT_EQ(swapped[i * 12 + 6 * j + k],
                    static_cast<float>(100 * j + (2 * r + i) * 6 + k) / 7.0f);
    // A quarter or so of the 24 dropped, the rest scaled by 4/3.
    int zeros = 0;
    for (float v : cpuOut[r]["dropped"])
      zeros += v == 0.0f;
    EXPECT_GT(zeros, 1);
    EXPECT_LT(zeros, 12);
  }
}

// Reductions run in two passes on the GPU (partials over chunks of the
// reduced elements, then per output): a gradient norm's hundreds of
// thousands of elements into one, a bias gradient's rows into columns,
// a middle dimension, a NaN-propagating maximum, and a norm's weight and
// bias gradients over 512 rows (four chunks), a bf16 bias gradient and a
// bf16 LayerNorm gradient read and written as stored, against the CPU's
// one-thread-per-output sums (to f32 rounding: the order differs).
TEST(EmulatedGpu, ReductionsMatchTheCpu) {
  std::string dir = handWrittenBundle(R"mlir(
    func.func @run(%a: tensor<64x4096xf32>, %b: tensor<512x96xf32>,
                   %c: tensor<8x33x40xf32>, %d: tensor<100x7xf32>,
                   %e: tensor<300x64xbf16>, %f: tensor<64x96xbf16>)
        -> (tensor<f32> {weft.output = "norm"},
            tensor<96xf32> {weft.output = "columns"},
            tensor<8x40xf32> {weft.output = "middle"},
            tensor<100xf32> {weft.output = "max"},
            tensor<96xf32> {weft.output = "ln_weight_grad"},
            tensor<96xf32> {weft.output = "ln_bias_grad"},
            tensor<96xf32> {weft.output = "rms_weight_grad"},
            tensor<64xbf16> {weft.output = "bf16_columns"},
            tensor<64x96xbf16> {weft.output = "bf16_ln_input_grad"},
            tensor<96xbf16> {weft.output = "bf16_ln_weight_grad"},
            tensor<96xbf16> {weft.output = "bf16_ln_bias_grad"}) {
      %0 = weft.reduce_sum %a dims [0, 1] : tensor<64x4096xf32>
      %1 = weft.reduce_sum %b dims [0] : tensor<512x96xf32>
      %2 = weft.reduce_mean %c dims [1] : tensor<8x33x40xf32>
      %3 = weft.reduce_max %d dims [1] : tensor<100x7xf32>
      %w = weft.constant dense<1.5> : tensor<96xf32>
      %4:3 = weft.layer_norm_grad %b, %w, %b : tensor<512x96xf32>, tensor<96xf32>
      %5:2 = weft.rms_norm_grad %b, %w, %b {epsilon = 1.0e-5 : f64} : tensor<512x96xf32>, tensor<96xf32>
      %6 = weft.reduce_sum %e dims [0] : tensor<300x64xbf16>
      %wb = weft.constant dense<1.5> : tensor<96xbf16>
      %7:3 = weft.layer_norm_grad %f, %wb, %f : tensor<64x96xbf16>, tensor<96xbf16>
      return %0, %1, %2, %3, %4#1, %4#2, %5#1, %6, %7#0, %7#1, %7#2 : tensor<f32>, tensor<96xf32>, tensor<8x40xf32>, tensor<100xf32>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>, tensor<64xbf16>, tensor<64x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
    }
  )mlir",
                                      "reductions");
  ASSERT_FALSE(dir.empty());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(1.0f, 2.0f);
  std::vector<std::vector<float>> inputs = {
      std::vector<float>(64 * 4096), std::vector<float>(512 * 96),
      std::vector<float>(8 * 33 * 40), std::vector<float>(100 * 7)};
  for (auto &in : inputs)
    for (float &v : in)
      v = normal(rng);
  inputs[3][3 * 7 + 4] = NAN; // Row 3's maximum is NaN.
  // A bf16 input, read as stored by the GPU's reduction.
  std::vector<uint16_t> bf16(300 * 64), bf16Rows(64 * 96);
  for (std::vector<uint16_t> *narrow : {&bf16, &bf16Rows})
    for (uint16_t &v : *narrow)
      runtime::encode(normal(rng), runtime::DType::BF16,
                      reinterpret_cast<uint8_t *>(&v));
  auto cpu = runtime::Executor::create(*runtime::Bundle::load(dir));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(
      (*cpu)
          ->run("run", {{{64, 4096}, runtime::DType::F32, inputs[0].data()},
                        {{512, 96}, runtime::DType::F32, inputs[1].data()},
                        {{8, 33, 40}, runtime::DType::F32, inputs[2].data()},
                        {{100, 7}, runtime::DType::F32, inputs[3].data()},
                        {{300, 64}, runtime::DType::BF16, bf16.data()},
                        {{64, 96}, runtime::DType::BF16, bf16Rows.data()}})
          .ok());
  std::unique_ptr<testutil::EmulatedGpu> device = emulatedGpuFor(dir);
  ASSERT_TRUE(device);
  auto gemm = std::make_unique<testutil::HostGemm>(*device);
  runtime::Bundle bundle = *runtime::Bundle::load(dir); // Outlives the GPU.
  auto gpu =
      runtime::GpuBackend::createOn(bundle, {}, runtime::GpuBackend::Options(),
                                    std::move(device), std::move(gemm));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  absl::Status run =
      (*gpu)->run("run", {inputs[0].data(), inputs[1].data(), inputs[2].data(),
                          inputs[3].data(), bf16.data(), bf16Rows.data()});
  ASSERT_TRUE(run.ok()) << run;
  // The bf16 sums themselves, to bf16 rounding: outputs are decoded from
  // their own type, on both runtimes.
  std::vector<float> sums = *(*cpu)->output("run", "bf16_columns");
  for (int j = 0; j < 64; ++j) {
    double want = 0;
    for (int r = 0; r < 300; ++r)
      want += runtime::decode(reinterpret_cast<uint8_t *>(&bf16[r * 64 + j]),
                              runtime::DType::BF16);
    EXPECT_NEAR(sums[j], want, std::fabs(want) / 256) << j;
  }
  for (const char *name :
       {"norm", "columns", "middle", "max", "ln_weight_grad", "ln_bias_grad",
        "rms_weight_grad", "bf16_columns", "bf16_ln_input_grad",
        "bf16_ln_weight_grad", "bf16_ln_bias_grad"}) {
    SCOPED_TRACE(name);
    // bf16 results may round the other way where the sums' order moved
    // them across a rounding boundary: one bf16 step (2^-8 relative).
    double relative =
        std::string(name).rfind("bf16", 0) == 0 ? 1.0 / 128 : 1e-6;
    std::vector<float> want = *(*cpu)->output("run", name),
                       got = *(*gpu)->output("run", name);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
        continue;
      }
      EXPECT_NEAR(got[i], want[i], relative * std::fabs(want[i]) + 1e-6) << i;
    }
  }
}

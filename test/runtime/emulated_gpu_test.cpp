//===- emulated_gpu_test.cpp - the GPU runtime on an emulated device ------===//
//
// GpuBackend trains GPT-2-tiny and Llama-tiny (f32 and bf16) on
// EmulatedGpu: the same plans, argument blobs, CUDA kernel sources and
// graph replay as on a GPU, with host memory and C++-compiled kernels. The
// losses and every parameter after three AdamW steps must match the CPU
// runtime's. What this cannot check (the driver, cuBLASLt, timing) is left
// to the GPU tests (gpu_kernels_test.cpp) and bench/gpu/run.sh.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "runtime/exec/Executor.h"
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

using namespace weft;

namespace {
std::string compileCudaBundle(const std::string &model,
                              const std::string &dtype) {
  TrainingOptions options;
  options.cudaArchs = {"sm_90"};
  // As in the CPU parity tests: with eps 1e-8, a gradient that cancels to
  // ~1e-10 (a key bias's is zero in exact arithmetic) turns a different
  // summation order into a full +-lr step; 1e-4 keeps such noise small.
  options.adamw.eps = 1e-4;
  return testutil::compileExampleBundle(model, dtype, options);
}

/// An emulated GPU with the bundle's kernels and the runtime's loaded.
std::unique_ptr<testutil::EmulatedGpu> emulatedGpuFor(const std::string &dir) {
  auto gpu = std::make_unique<testutil::EmulatedGpu>();
  std::ifstream in(dir + "/kernels.cu");
  std::stringstream generated;
  generated << in.rdbuf();
  for (auto [source, label] :
       {std::pair{generated.str(), std::string("kernels")},
        std::pair{std::string(runtime::gpuOpsSource()), std::string("ops")},
        std::pair{std::string(runtime::gpuAttentionSource()),
                  std::string("attention")}}) {
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

void start(Training &run, const std::string &dir) {
  auto bundle = runtime::Bundle::load(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  run.bundle = *bundle;
  auto cpu = runtime::Executor::create(std::move(*bundle));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  run.cpu = std::move(*cpu);
  run.cpu->initialize(5);
  std::unique_ptr<testutil::EmulatedGpu> device = emulatedGpuFor(dir);
  ASSERT_TRUE(device);
  run.device = device.get();
  auto gemm = std::make_unique<testutil::HostGemm>(*device);
  auto gpu = runtime::GpuBackend::createOn(run.bundle, run.cpu->params(), {},
                                           std::move(device), std::move(gemm));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  run.gpu = std::move(*gpu);
  ASSERT_TRUE(run.gpu->uploadParams(run.cpu->params()).ok());
}

void checkTraining(const std::string &model, const std::string &dtype,
                   double tolerance) {
  SCOPED_TRACE(model + " " + dtype);
  Training run;
  start(run, compileCudaBundle(model, dtype));
  if (::testing::Test::HasFatalFailure())
    return;
  int64_t vocab = 256; // Both tiny models' (the bundle's meta is not set here).
  std::mt19937 rng(9);
  for (int step = 1; step <= 3; ++step) {
    std::vector<int32_t> tokens(32), labels(32);
    for (int32_t &t : tokens)
      t = static_cast<int32_t>(rng() % vocab);
    for (int32_t &t : labels)
      t = static_cast<int32_t>(rng() % vocab);
    float lr = 1e-3f, number = static_cast<float>(step);
    ASSERT_TRUE(
        run.cpu
            ->run("step", {{{2, 16}, runtime::DType::I32, tokens.data()},
                           {{2, 16}, runtime::DType::I32, labels.data()},
                           {{}, runtime::DType::F32, &lr},
                           {{}, runtime::DType::F32, &number}})
            .ok());
    absl::Status s =
        run.gpu->run("step", {tokens.data(), labels.data(), &lr, &number});
    ASSERT_TRUE(s.ok()) << s;
    float cpuLoss = *run.cpu->scalarOutput("step", "loss");
    absl::StatusOr<std::vector<float>> gpuLoss =
        run.gpu->output("step", "loss");
    ASSERT_TRUE(gpuLoss.ok()) << gpuLoss.status();
    EXPECT_NEAR(gpuLoss->at(0), cpuLoss, tolerance * std::fabs(cpuLoss))
        << "step " << step;
  }
  // Steps 2 and 3 replayed the graph recorded on step 2.
  EXPECT_EQ(run.device->replays(), 2);
  std::map<std::string, std::vector<float>> gpuParams = run.cpu->params();
  ASSERT_TRUE(run.gpu->downloadParams(gpuParams).ok());
  for (const auto &[name, cpu] : run.cpu->params()) {
    // In bf16 a gradient's last bit depends on summation order, and Adam's
    // moments carry that bit; the parameters are what must agree.
    if (dtype == "bf16" && run.bundle.param(name)->state)
      continue;
    const std::vector<float> &gpu = gpuParams.at(name);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(cpu[i])));
      worst = std::max(worst, std::fabs(static_cast<double>(cpu[i]) - gpu[i]));
    }
    EXPECT_LE(worst, tolerance * std::max(scale, 1e-6))
        << name << ": worst difference " << worst << " at scale " << scale;
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

TEST(EmulatedGpu, ATokenIdOutOfRangeIsReportedWithItsStep) {
  Training run;
  start(run, compileCudaBundle("gpt2-tiny", "f32"));
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

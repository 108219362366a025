//===- gpu_kernels_test.cpp - generated kernels on a GPU vs the CPU -------===//
//
// Runs where a GPU is; elsewhere (CI) each test skips with the reason. On a
// GPU every fused kernel of the GPT-2-tiny and Llama-tiny training steps
// runs from the bundle's cubin and must give the CPU kernel's values.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelExpr.h"
#include "codegen/KernelSource.h"
#include "compiler/Pipeline.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/Nvrtc.h"
#include "test/compiler/TestUtils.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace weft;
using runtime::CudaDevice;

namespace {
/// The first GPU, or a skip saying why there is none.
#define WEFT_OPEN_GPU_OR_SKIP(device)                                          \
  auto device##OrError = CudaDevice::open();                                   \
  if (!device##OrError.ok())                                                   \
    GTEST_SKIP() << "GPU test skipped: "                                       \
                 << device##OrError.status().message();                        \
  CudaDevice &device = **device##OrError

void checkModel(CudaDevice &gpu, const std::string &name) {
  SCOPED_TRACE(name);
  auto context = testutil::makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = testutil::buildExampleModel(
      *context, name, {2, 16, "f32", /*masterWeights=*/true});
  ASSERT_TRUE(module);
  std::string dir = testutil::uniqueTempPath(name + "-gpu-bundle");
  TrainingOptions options;
  options.cudaArchs = {gpu.arch()};
  ASSERT_TRUE(mlir::succeeded(
      compileSchedBundle(*module, dir, options, llvm::json::Object{})));
  void *cpu = dlopen((dir + "/kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cpu, nullptr) << dlerror();
  ASSERT_TRUE(
      gpu.loadCubin(dir + "/kernels." + gpu.arch() + ".cubin", gpu.arch())
          .ok());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  int checked = 0;
  module->walk([&](FusedOp fused) {
    std::string kernel =
        fused->getAttrOfType<mlir::StringAttr>("weft.kernel").str();
    SCOPED_TRACE(kernel);
    auto count = [](mlir::Type t) {
      return mlir::cast<mlir::RankedTensorType>(t).getNumElements();
    };
    int64_t n = count(fused.getResultTypes().front());
    std::vector<std::vector<float>> ins, cpuOuts, gpuOuts;
    for (mlir::Type t : fused.getInputs().getTypes()) {
      ins.emplace_back(count(t));
      for (float &x : ins.back())
        x = uniform(rng);
    }
    for (mlir::Type t : fused.getResultTypes()) {
      cpuOuts.emplace_back(count(t));
      gpuOuts.emplace_back(count(t));
    }
    using Launcher = void (*)(const float *const *, float *const *, int64_t);
    auto launcher = reinterpret_cast<Launcher>(dlsym(cpu, kernel.c_str()));
    ASSERT_NE(launcher, nullptr);
    std::vector<const float *> inPtrs;
    std::vector<float *> outPtrs;
    for (auto &v : ins)
      inPtrs.push_back(v.data());
    for (auto &v : cpuOuts)
      outPtrs.push_back(v.data());
    launcher(inPtrs.data(), outPtrs.data(), n);

    std::vector<runtime::DeviceBuffer> buffers;
    for (auto &v : ins) {
      auto b = gpu.allocate(v.size() * sizeof(float));
      ASSERT_TRUE(b.ok()) << b.status();
      ASSERT_TRUE(gpu.copyToDevice(*b, v.data(), v.size() * 4).ok());
      buffers.push_back(*b);
    }
    for (auto &v : gpuOuts) {
      auto b = gpu.allocate(v.size() * sizeof(float));
      ASSERT_TRUE(b.ok()) << b.status();
      buffers.push_back(*b);
    }
    std::vector<void *> args;
    for (runtime::DeviceBuffer &b : buffers)
      args.push_back(&b.address);
    args.push_back(&n);
    auto fn = gpu.function(kernel + "_cuda");
    ASSERT_TRUE(fn.ok()) << fn.status();
    bool row = codegen::isRowGroup(fused);
    int64_t d = mlir::cast<mlir::RankedTensorType>(fused.getResultTypes()[0])
                    .getShape()
                    .back();
    unsigned grid =
        row ? static_cast<unsigned>(n / d)
            : static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
    ASSERT_TRUE(gpu.launch(*fn, grid, 256, args).ok());
    for (size_t r = 0; r < gpuOuts.size(); ++r) {
      ASSERT_TRUE(gpu.copyToHost(gpuOuts[r].data(), buffers[ins.size() + r],
                                 gpuOuts[r].size() * 4)
                      .ok());
      for (size_t i = 0; i < gpuOuts[r].size(); ++i)
        ASSERT_NEAR(gpuOuts[r][i], cpuOuts[r][i],
                    1e-6 * (1 + std::fabs(cpuOuts[r][i])))
            << "result " << r << " element " << i;
    }
    ++checked;
  });
  EXPECT_GT(checked, 10);
  dlclose(cpu);
}
} // namespace

// Compiling at load needs NVRTC but no GPU: checked wherever the toolkit is.
TEST(Nvrtc, CompilesABundlesKernelsForAnArchitectureAtLoad) {
  auto context = testutil::makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      testutil::buildExampleStep(*context, "llama-tiny", 2, 8);
  ASSERT_TRUE(module);
  mlir::FailureOr<std::string> source = codegen::emitCudaKernelSource(*module);
  ASSERT_TRUE(mlir::succeeded(source));
  absl::StatusOr<std::string> cubin =
      runtime::compileCudaSource(*source, "sm_90", "kernels.cu");
  if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
    GTEST_SKIP() << cubin.status().message();
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  // A cubin is an ELF image.
  EXPECT_EQ(cubin->substr(0, 4), "\x7f"
                                 "ELF");
}

TEST(Nvrtc, ReportsCompileErrorsWithTheLog) {
  absl::StatusOr<std::string> cubin = runtime::compileCudaSource(
      "__global__ void k() { undefined_name(); }", "sm_90", "broken.cu");
  if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
    GTEST_SKIP() << cubin.status().message();
  ASSERT_FALSE(cubin.ok());
  std::string message(cubin.status().message());
  EXPECT_NE(message.find("broken.cu: compiling for sm_90 failed"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("undefined_name"), std::string::npos) << message;
}

TEST(CudaDevice, OpensOrSaysWhyNot) {
  auto device = CudaDevice::open();
  if (!device.ok()) {
    // Without a GPU the error names what is missing, never a crash.
    std::string why(device.status().message());
    EXPECT_TRUE(why.find("no CUDA") != std::string::npos) << why;
    GTEST_SKIP() << "GPU test skipped: " << why;
  }
  EXPECT_FALSE((*device)->name().empty());
  EXPECT_EQ((*device)->arch().rfind("sm_", 0), 0u);
}

TEST(CudaDevice, RefusesCubinsOfAnotherArchitecture) {
  WEFT_OPEN_GPU_OR_SKIP(gpu);
  std::string other = gpu.arch() == "sm_80" ? "sm_90" : "sm_80";
  absl::Status s = gpu.loadCubin("kernels." + other + ".cubin", other);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(s.message()).find("built for " + other),
            std::string::npos);
}

TEST(GpuKernels, Gpt2TinyKernelsMatchTheCpu) {
  WEFT_OPEN_GPU_OR_SKIP(gpu);
  checkModel(gpu, "gpt2-tiny");
}

TEST(GpuKernels, LlamaTinyKernelsMatchTheCpu) {
  WEFT_OPEN_GPU_OR_SKIP(gpu);
  checkModel(gpu, "llama-tiny");
}

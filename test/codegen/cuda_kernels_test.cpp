//===- cuda_kernels_test.cpp - every emitted CUDA kernel compiles ---------===//
//
// The GPU backend's kernels are checked without a GPU: NVRTC needs no
// device. For the GPT-2-tiny and Llama-tiny training steps, the CUDA source
// of every fused group compiles for sm_90, and the PTX holds one entry per
// group, under the name the bundle records.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelExpr.h"
#include "codegen/KernelSource.h"
#include "compiler/Pipeline.h"
#include "frontend/models/ModelConfig.h"
#include "test/compiler/TestUtils.h"

#include <nvrtc.h>

#include <gtest/gtest.h>

#include <set>

using namespace weft;

namespace {
/// NVRTC's PTX for `source` (sm_90, no fused multiply-add), or a failure
/// holding its log.
testing::AssertionResult compileWithNvrtc(const std::string &source,
                                          std::string &ptx) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), "kernels.cu", 0, nullptr,
                         nullptr) != NVRTC_SUCCESS)
    return testing::AssertionFailure() << "nvrtcCreateProgram failed";
  const char *options[] = {"--gpu-architecture=sm_90", "--fmad=false"};
  nvrtcResult result = nvrtcCompileProgram(program, 2, options);
  size_t logSize = 0;
  nvrtcGetProgramLogSize(program, &logSize);
  std::string log(logSize, '\0');
  nvrtcGetProgramLog(program, log.data());
  if (result != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    return testing::AssertionFailure() << nvrtcGetErrorString(result) << ":\n"
                                       << log;
  }
  size_t ptxSize = 0;
  nvrtcGetPTXSize(program, &ptxSize);
  ptx.assign(ptxSize, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  return testing::AssertionSuccess();
}

void checkModel(const std::string &name) {
  SCOPED_TRACE(name);
  auto context = testutil::makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      testutil::buildExampleStep(*context, name, 2, 16);
  ASSERT_TRUE(module);
  mlir::FailureOr<std::string> source = codegen::emitCudaKernelSource(*module);
  ASSERT_TRUE(mlir::succeeded(source));
  std::string ptx;
  ASSERT_TRUE(compileWithNvrtc(*source, ptx));
  int groups = 0, rows = 0;
  std::set<std::string> kernels;
  module->walk([&](FusedOp fused) {
    ++groups;
    std::string kernel =
        fused->getAttrOfType<mlir::StringAttr>("weft.kernel").str() + "_cuda";
    kernels.insert(kernel);
    EXPECT_NE(ptx.find(".entry " + kernel + "("), std::string::npos)
        << kernel << " is missing from the PTX";
    if (codegen::isRowGroup(fused))
      ++rows;
  });
  // Both models fuse elementwise chains and residual + norm row groups.
  EXPECT_GT(groups, 10);
  EXPECT_GT(rows, 2);
  size_t entries = 0;
  for (size_t at = ptx.find(".entry "); at != std::string::npos;
       at = ptx.find(".entry ", at + 1))
    ++entries;
  // The layers repeat their groups, which share kernels: one entry each.
  EXPECT_EQ(entries, kernels.size());
  EXPECT_LT(kernels.size(), static_cast<size_t>(groups));
}
} // namespace

TEST(CudaKernels, Gpt2TinyStepCompilesWithNvrtcForSm90) {
  checkModel("gpt2-tiny");
}
TEST(CudaKernels, LlamaTinyStepCompilesWithNvrtcForSm90) {
  checkModel("llama-tiny");
}

// The runtime's own kernels (attention.cu, ops.cu) compile in
// gpu_plan_test.cpp, as the runtime builds them in.

// A kernel NVRTC rejects is reported with its log, not crashed on.
TEST(CudaKernels, NvrtcErrorsAreReported) {
  std::string ptx;
  testing::AssertionResult result =
      compileWithNvrtc("__global__ void k() { undefined_name(); }", ptx);
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("undefined_name"),
            std::string::npos);
}

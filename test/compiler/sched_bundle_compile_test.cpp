//===- sched_bundle_compile_test.cpp - compiled v2 bundles load -----------===//
//
// What compileSchedBundle writes is what the runtime's v2 loader accepts:
// every check the loader makes (kernel hashes included) passes on real
// models, placed and narrow, for the CPU and the GPU.
//
//===----------------------------------------------------------------------===//

#include "test/compiler/TestUtils.h"

#include "codegen/KernelSource.h"
#include "frontend/models/ModelConfig.h"
#include "runtime/exec/SchedBundle.h"

#include <gtest/gtest.h>

#include <ostream>

namespace weft {
namespace {

struct Case {
  const char *model;
  const char *dtype;
  const char *plan;
  bool cuda;
};

// So ctest lists a case by what it compiles, not by its bytes.
void PrintTo(const Case &c, std::ostream *os) {
  *os << c.model << " " << c.dtype << " [" << c.plan << "] "
      << (c.cuda ? "cuda" : "cpu");
}

class CompiledSchedBundle : public ::testing::TestWithParam<Case> {};

TEST_P(CompiledSchedBundle, LoadsInTheRuntime) {
  const Case &c = GetParam();
  if (c.cuda && codegen::findNvcc().empty())
    GTEST_SKIP() << "no nvcc for the cubins";
  auto context = testutil::makeContext();
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/" + c.model + ".json");
  ASSERT_TRUE(static_cast<bool>(config));
  auto module =
      buildModel(*context, *config, {4, 8, c.dtype, /*masterWeights=*/true});
  ASSERT_TRUE(static_cast<bool>(module));
  TrainingOptions options;
  if (*c.plan) {
    auto plan = parsePlan(c.plan);
    ASSERT_TRUE(static_cast<bool>(plan));
    options.plan = std::move(*plan);
  }
  if (c.cuda)
    options.cudaArchs = {"sm_90"};
  std::string dir = testutil::uniqueTempPath(std::string(c.model) + "-v2");
  ASSERT_TRUE(mlir::succeeded(
      compileSchedBundle(**module, dir, options, llvm::json::Object{})));
  auto bundle = runtime::sched::loadSchedBundle(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  ASSERT_TRUE(bundle->kernels.cpu.has_value());
  EXPECT_EQ(bundle->kernels.cuda.count("sm_90"), c.cuda ? 1u : 0u);
  std::vector<std::string> names;
  for (const runtime::sched::Program &p : bundle->programs)
    names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"forward", "step"}));
}

INSTANTIATE_TEST_SUITE_P(
    Models, CompiledSchedBundle,
    ::testing::Values(Case{"gpt2-tiny", "f32", "", false},
                      Case{"llama-tiny", "bf16", "dp=2,tp=2", false},
                      Case{"mixtral-tiny", "f32", "dp=2,zero=3", false},
                      Case{"gpt2-tiny", "bf16", "dp=2", true},
                      Case{"llama-tiny", "bf16", "tp=2,sp=on", true}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string name = std::string(info.param.model) + "_" +
                         info.param.dtype + "_" +
                         (*info.param.plan ? info.param.plan : "one") + "_" +
                         (info.param.cuda ? "cuda" : "cpu");
      for (char &ch : name)
        if (!isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return name;
    });

} // namespace
} // namespace weft

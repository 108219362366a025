//===- gpu_plan_test.cpp - GPU launch plans, checked without a GPU --------===//
//
// The GPU runtime turns every step of a bundle's programs into launches
// before it touches a device. These tests plan the GPT-2-tiny and
// Llama-tiny training bundles (f32 and bf16, compiled for sm_90) and check
// that each launch names a kernel that exists in the source it comes from,
// with as many arguments as that kernel takes, and that the runtime's own
// kernels compile with NVRTC. On a GPU, gpu_kernels_test.cpp runs them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "passes/sharding/Passes.h"
#include "runtime/exec/Bundle.h"
#include "runtime/gpu/GpuPlan.h"
#include "runtime/gpu/Nvrtc.h"
#include "test/compiler/TestUtils.h"
#include "test/runtime/EmulatedGpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace weft;
using runtime::GpuLaunch;

namespace {
std::string compileBundle(const std::string &model, const std::string &dtype,
                          bool cuda) {
  TrainingOptions options;
  if (cuda)
    options.cudaArchs = {"sm_90"};
  return testutil::compileExampleBundle(model, dtype, options);
}

/// GEMM epilogues a program's plan holds, by name and count.
using EpilogueCounts = std::map<std::string, int>;

void checkPlans(const std::string &model, const std::string &dtype,
                runtime::GpuPlanOptions options = {},
                std::map<std::string, EpilogueCounts> epilogues = {}) {
  bool fused = options.attentionScratchBytes == 0;
  SCOPED_TRACE(model + " " + dtype + (fused ? " fused attention" : ""));
  std::string dir = compileBundle(model, dtype, /*cuda=*/true);
  absl::StatusOr<runtime::Bundle> bundle = runtime::Bundle::load(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  std::ifstream generated(dir + "/kernels.cu");
  std::stringstream text;
  text << generated.rdbuf();
  std::map<std::string, int> arity =
      testutil::cudaKernelArity(runtime::gpuOpsSource());
  arity.merge(testutil::cudaKernelArity(runtime::gpuAttentionSource()));
  arity.merge(testutil::cudaKernelArity(text.str()));
  for (const std::string program : {"step", "forward"}) {
    absl::StatusOr<runtime::GpuProgramPlan> plan =
        runtime::planGpuProgram(*bundle, program, options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const runtime::ProgramSpec &spec = bundle->programs.at(program);
    std::map<std::string, int> used;
    std::map<int64_t, int> gemmsOf; // By step.
    EpilogueCounts epilogueCounts;
    for (const GpuLaunch &l : plan->launches) {
      ASSERT_GE(l.step, 0);
      ASSERT_LT(l.step, static_cast<int64_t>(spec.steps.size()));
      const runtime::StepSpec &step = spec.steps[l.step];
      if (l.kind == GpuLaunch::Kind::Gemm) {
        ++gemmsOf[l.step];
        const runtime::ValueSpec &c = spec.values[step.results[0]];
        if (step.op.rfind("weft.matmul", 0) == 0)
          EXPECT_EQ(l.gemm.batch * l.gemm.m * l.gemm.n, c.numElements());
        EXPECT_EQ(l.gemm.type, c.dtype);
        // The epilogue's bias and aux are passed exactly when it has them.
        EXPECT_EQ(l.gemm.epilogue != runtime::GemmEpilogue::None,
                  step.op == "weft.matmul_epilogue");
        EXPECT_EQ(l.args[3].kind != runtime::GpuArg::Kind::Null,
                  l.gemm.hasBias());
        EXPECT_EQ(l.args[4].kind != runtime::GpuArg::Kind::Null,
                  l.gemm.hasAux());
        if (l.gemm.epilogue != runtime::GemmEpilogue::None)
          ++epilogueCounts[runtime::gemmEpilogueName(l.gemm.epilogue)];
        continue;
      }
      if (l.kind != GpuLaunch::Kind::Kernel)
        continue;
      auto it = arity.find(l.kernel);
      ASSERT_NE(it, arity.end())
          << "step " << l.step << " (" << spec.steps[l.step].op
          << ") launches '" << l.kernel << "', which no source defines";
      EXPECT_EQ(static_cast<int>(l.args.size()), it->second) << l.kernel;
      EXPECT_GE(l.grid[0] * l.grid[1] * l.grid[2], 1u) << l.kernel;
      ++used[l.kernel];
    }
    // Every matmul is one cuBLASLt GEMM; attention is cuBLASLt around a
    // softmax kernel (2 GEMMs forward, 5 backward, per batch and query head
    // of a kv group), or the fused kernels. No elementwise op is left
    // without a generated kernel (planning would have failed).
    for (size_t i = 0; i < spec.steps.size(); ++i) {
      const runtime::StepSpec &step = spec.steps[i];
      int expected = step.op.rfind("weft.matmul", 0) == 0 ? 1 : 0;
      if (!fused && step.op.rfind("weft.attention", 0) == 0) {
        const auto &q = spec.values[step.operands[0]].shape,
                   &k = spec.values[step.operands[1]].shape;
        expected = (step.op == "weft.attention" ? 2 : 5) * q[0] * (q[2] / k[2]);
      }
      EXPECT_EQ(gemmsOf[i], expected) << "step " << i << " (" << step.op << ")";
    }
    EXPECT_EQ(epilogueCounts, epilogues[program]);
    EXPECT_GT(used[fused ? "weft_attention_forward" +
                               std::string(dtype == "bf16" ? "_bf16" : "")
                         : "weft_attention_probs"],
              0);
    if (program == "step") {
      EXPECT_GT(used["weft_cross_entropy_grad"], 0);
      EXPECT_GT(used["weft_norm_grad_rows"], 0);
      // Mixed precision widens and rounds around f32 kernels.
      EXPECT_EQ(used["weft_convert"] > 0, dtype == "bf16");
    }
  }
}
} // namespace

// GPT-2's two blocks each have three linear layers with a bias alone (qkv,
// attention out, MLP out) and one with bias and GELU (MLP in), whose
// gradient is the one dgelu; Llama has no biases and uses SiLU.
const std::map<std::string, EpilogueCounts> kGpt2TinyEpilogues = {
    {"step", {{"bias", 6}, {"bias_gelu", 2}, {"dgelu", 2}}},
    {"forward", {{"bias", 6}, {"bias_gelu", 2}}}};

TEST(GpuPlan, Gpt2TinyF32StepsAllHaveKernels) {
  checkPlans("gpt2-tiny", "f32", {}, kGpt2TinyEpilogues);
}
TEST(GpuPlan, Gpt2TinyBf16StepsAllHaveKernels) {
  checkPlans("gpt2-tiny", "bf16", {}, kGpt2TinyEpilogues);
}
TEST(GpuPlan, LlamaTinyF32StepsAllHaveKernels) {
  checkPlans("llama-tiny", "f32");
}
TEST(GpuPlan, LlamaTinyBf16StepsAllHaveKernels) {
  checkPlans("llama-tiny", "bf16");
}

TEST(GpuPlan, MixtralTinyF32StepsAllHaveKernels) {
  checkPlans("mixtral-tiny", "f32");
}

TEST(GpuPlan, FusedAttentionKernelsWhenScoresAreOverBudget) {
  runtime::GpuPlanOptions fused;
  fused.attentionScratchBytes = 0;
  checkPlans("gpt2-tiny", "bf16", fused, kGpt2TinyEpilogues);
  checkPlans("llama-tiny", "f32", fused);
}

TEST(GpuPlan, ABundleBuiltForTheCpuIsRefusedWithTheFix) {
  std::string dir = compileBundle("gpt2-tiny", "f32", /*cuda=*/false);
  absl::StatusOr<runtime::Bundle> bundle = runtime::Bundle::load(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  absl::StatusOr<runtime::GpuProgramPlan> plan =
      runtime::planGpuProgram(*bundle, "step");
  ASSERT_FALSE(plan.ok());
  std::string message(plan.status().message());
  EXPECT_NE(message.find("program step, step "), std::string::npos) << message;
  EXPECT_NE(message.find("--target cuda"), std::string::npos) << message;
}

TEST(GpuPlan, TheRuntimesOwnKernelsCompileWithNvrtc) {
  for (auto [source, label] :
       {std::pair{runtime::gpuOpsSource(), "ops.cu"},
        std::pair{runtime::gpuAttentionSource(), "attention.cu"}}) {
    absl::StatusOr<std::string> cubin =
        runtime::compileCudaSource(source, "sm_90", label);
    if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
      GTEST_SKIP() << cubin.status().message();
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_EQ(cubin->substr(0, 4), "\x7f"
                                   "ELF");
  }
}

namespace {
/// Walks a placed bundle's plans as the two streams would run them and
/// checks that nothing on the compute stream touches arena bytes of a
/// collective step before waiting for that step's event, and that the
/// communication stream starts each collective step after waiting for the
/// compute stream.
void checkStreams(const std::string &model, const std::string &planSpec) {
  SCOPED_TRACE(model + " " + planSpec);
  TrainingOptions options;
  options.cudaArchs = {"sm_90"};
  auto parsed = parsePlan(planSpec);
  ASSERT_TRUE(static_cast<bool>(parsed));
  options.plan = *parsed;
  std::string dir = testutil::compileExampleBundle(model, "f32", options);
  absl::StatusOr<runtime::Bundle> bundle = runtime::Bundle::load(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  for (int64_t rank = 0; rank < bundle->mesh.size(); ++rank) {
    runtime::GpuPlanOptions planOptions;
    planOptions.rank = rank;
    absl::StatusOr<runtime::GpuProgramPlan> plan =
        runtime::planGpuProgram(*bundle, "step", planOptions);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const runtime::ProgramSpec &spec = bundle->programs.at("step");
    auto bytesOf = [&](int64_t step) {
      std::vector<std::pair<int64_t, int64_t>> ranges;
      const runtime::StepSpec &s = spec.steps[step];
      for (const auto *ids : {&s.operands, &s.results})
        for (int64_t id : *ids)
          if (spec.values[id].kind == runtime::ValueSpec::Kind::Arena)
            ranges.push_back(
                {spec.values[id].offset,
                 spec.values[id].offset + spec.values[id].bytes()});
      return ranges;
    };
    // Collective steps in flight: their step and the event that ends them.
    std::vector<std::pair<int64_t, int64_t>> inFlight;
    std::set<int64_t> computeRecorded, commWaited;
    int collectives = 0;
    for (const GpuLaunch &l : plan->launches) {
      if (l.kind == GpuLaunch::Kind::Record) {
        if (l.comm)
          inFlight.push_back({l.step, l.event});
        else
          computeRecorded.insert(l.event);
        continue;
      }
      if (l.kind == GpuLaunch::Kind::Wait) {
        if (l.comm) {
          EXPECT_TRUE(computeRecorded.count(l.event)) << "step " << l.step;
          commWaited.insert(l.step);
        } else { // The compute stream has passed everything up to it.
          auto it = std::find_if(inFlight.begin(), inFlight.end(),
                                 [&](auto &f) { return f.second == l.event; });
          ASSERT_NE(it, inFlight.end());
          inFlight.erase(inFlight.begin(), it + 1);
        }
        continue;
      }
      if (l.comm) {
        collectives += l.kind == GpuLaunch::Kind::Collective;
        EXPECT_TRUE(commWaited.count(l.step)) << "step " << l.step;
        continue;
      }
      for (auto [step, event] : inFlight)
        for (auto [b0, e0] : bytesOf(step))
          for (auto [b1, e1] : bytesOf(l.step))
            EXPECT_FALSE(b0 < e1 && b1 < e0)
                << "step " << l.step << " (" << spec.steps[l.step].op
                << ") touches bytes of collective step " << step
                << " before waiting for it";
    }
    EXPECT_TRUE(inFlight.empty()) << "the program ends before its collectives";
    EXPECT_GT(collectives, 0);
  }
}
} // namespace

TEST(GpuPlan, CollectivesRunBesideComputeWithoutRaces) {
  checkStreams("gpt2-tiny", "dp=2");
  checkStreams("gpt2-tiny", "dp=2,zero=3");
  checkStreams("llama-tiny", "dp=2,tp=2");
}

// Every kernel spreads its work over the GPU: it either launches enough
// threads to fill one (half a million), or gives no thread more than 4 KiB
// of its buffers. A kernel that looped over a whole tensor on one thread
// (as the gradient norm's sums and LayerNorm's parameter gradients once
// did: one thread summing GPT-2's 38.6M-element embedding) fails this. The
// emulator runs such a kernel correctly, only slowly, so this is where it
// shows. GPT-2 124M (its real sizes) in f32 and bf16.
TEST(GpuPlan, EveryKernelSpreadsItsWorkOverTheGpu) {
  for (const char *dtype : {"f32", "bf16"}) {
    std::string dir = compileBundle("gpt2-124m", dtype, /*cuda=*/true);
    absl::StatusOr<runtime::Bundle> bundle = runtime::Bundle::load(dir);
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    for (const std::string program : {"step", "forward"}) {
      SCOPED_TRACE(std::string(dtype) + " " + program);
      absl::StatusOr<runtime::GpuProgramPlan> plan =
          runtime::planGpuProgram(*bundle, program);
      ASSERT_TRUE(plan.ok()) << plan.status();
      const runtime::ProgramSpec &spec = bundle->programs.at(program);
      int checked = 0;
      for (const GpuLaunch &l : plan->launches) {
        if (l.kind != GpuLaunch::Kind::Kernel)
          continue;
        double threads =
            static_cast<double>(l.grid[0]) * l.grid[1] * l.grid[2] * l.block;
        double bytes = runtime::launchCost(l, spec, *plan).bytes;
        EXPECT_TRUE(threads >= (1 << 19) || bytes <= 4096 * threads)
            << l.kernel << " (step " << l.step << ", " << spec.steps[l.step].op
            << "): " << bytes / 1e6 << " MB over " << threads << " threads";
        ++checked;
      }
      EXPECT_GT(checked, 20);
    }
  }
}

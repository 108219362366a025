//===- executor_test.cpp - compiled bundles against the reference ---------===//
//
// The compiled training step (bundle v2 + the CPU runtime, SchedExecutor)
// must agree with the reference evaluator running the same step IR before
// it is lowered to sched: loss and gradient norm of every step, every
// gradient, and every parameter after three AdamW steps.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/reference/Trainer.h"
#include "frontend/models/ModelConfig.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/train/Schedule.h"
#include "test/compiler/TestUtils.h"

#include <cmath>

using namespace weft;
using reference::Tensor;

namespace {
struct Batch {
  Tensor tokens, labels;
  std::vector<int32_t> tokenIds, labelIds;
};

Batch randomBatch(std::mt19937 &rng, int64_t b, int64_t s, int64_t vocab) {
  Batch batch;
  batch.tokens = testutil::randomIds({b, s}, vocab, rng);
  batch.labels = testutil::randomIds({b, s}, vocab, rng);
  for (double t : batch.tokens.data)
    batch.tokenIds.push_back(static_cast<int32_t>(t));
  for (double t : batch.labels.data)
    batch.labelIds.push_back(static_cast<int32_t>(t));
  return batch;
}

/// An FP8 run's gradient tensors against the evaluator's, in relative L2,
/// and its gradient norm, relative: block-wise (E4M3 gradient tiles, where
/// the other recipes' per-tensor or per-row gradients are E5M2 or scaled
/// by a whole row) flips more roundings, and the 4-layer model it needs
/// (128-wide GEMMs) carries them further back.
struct Fp8Tolerance {
  double gradient, gradNorm;
};
Fp8Tolerance fp8Tolerance(const std::string &recipe) {
  return recipe == "blockwise" ? Fp8Tolerance{1.5e-1, 5e-3}
                               : Fp8Tolerance{5e-2, 1e-3};
}

bool close(double a, double b, double rtol, double atol) {
  return std::fabs(a - b) <= atol + rtol * std::max(std::fabs(a), std::fabs(b));
}

/// Compiles `name` to a bundle, trains 3 steps both ways and compares.
void checkParity(const std::string &name, bool poison, int64_t b = 2,
                 int64_t s = 8, const std::string &dtype = "f32",
                 bool gpuBundle = false, const std::string &fp8 = "none") {
  bool narrow = dtype != "f32";
  // FP8 rounds at fixed points: where the evaluator's and the runtime's
  // f32 values (summed in other orders) straddle a rounding midpoint, an
  // element moves by an FP8 step, and the quantizations downstream see
  // inputs that differ by that much. A small block's scale magnifies the
  // f32 noise of its elements, so this grows through the backward, and
  // with the host's GEMM kernels (their summation order): the worst
  // gradient on a 2-core EPYC (2026-12-04) was 1e-6 (tensorwise, MXFP8),
  // 2e-3 (row-wise) and 5e-2 (block-wise, 4 layers) in relative L2; an
  // earlier Xeon saw 0.5% to 2.5%. A quantization that differs (MXFP8
  // scales taken as plain amax scales) moves them by 5-10%, which the 5%
  // tolerance catches; block-wise's 15% would not, so block-wise rests on
  // the loss (1e-4) and, per block, on fp8_test.cpp. The op itself
  // is checked bit for bit (fp8_test.cpp, Fp8QuantizeMatchesTheRuntime);
  // here each gradient tensor must agree to fp8Tolerance's and the loss
  // to 1e-4. Parameters, which Adam's sign-like step makes as sensitive, are
  // compared through the loss and norm.
  bool quantized = fp8 != "none";
  SCOPED_TRACE(name + " fp8=" + fp8);
  auto context = testutil::makeContext();
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/" + name + ".json");
  ASSERT_TRUE(static_cast<bool>(config));
  auto module =
      buildModel(*context, *config, {b, s, dtype, /*masterWeights=*/true});
  ASSERT_TRUE(static_cast<bool>(module));
  std::string dir = testutil::uniqueTempPath(name + "-bundle");
  TrainingOptions training;
  training.keepGradients = true;
  training.fp8.recipe = fp8;
  if (gpuBundle) // Also GPU kernels and, so, GEMM epilogues.
    training.cudaArchs = {"sm_90"};
  // The reference runs the weft programs the same pipeline makes, before
  // they are lowered to sched (which replaces them).
  mlir::OwningOpRef<mlir::ModuleOp> programs = (*module)->clone();
  ASSERT_TRUE(mlir::succeeded(buildTrainingPrograms(*programs, training)));
  // A recipe whose blocks no GEMM admits would test nothing.
  if (quantized) {
    auto step = programs->lookupSymbol<mlir::func::FuncOp>("step");
    ASSERT_TRUE(step);
    auto gemms = step->getAttrOfType<mlir::IntegerAttr>(kFp8GemmsAttr);
    ASSERT_TRUE(gemms && gemms.getInt() > 0) << "no FP8 GEMM";
  }
  ASSERT_TRUE(mlir::succeeded(
      compileSchedBundle(**module, dir, training, llvm::json::Object{})));

  auto bundle = runtime::sched::loadSchedBundle(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  runtime::SchedExecutor::Options options;
  options.poisonDeadBuffers = poison;
  auto executor = runtime::SchedExecutor::create(std::move(*bundle), options);
  ASSERT_TRUE(executor.ok()) << executor.status();
  (*executor)->initialize(5);
  reference::Trainer trainer(programs->lookupSymbol<mlir::func::FuncOp>("step"),
                             5);
  auto param = [&](const std::string &pname) {
    absl::StatusOr<std::vector<float>> v = (*executor)->param(pname);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : std::vector<float>();
  };

  std::mt19937 rng(9);
  runtime::LrSchedule schedule{3e-3, 1, 3, 0.1};
  int checked = 0;
  double worstRelative = 0; // Of an FP8 run's gradients.
  for (int step = 1; step <= 3; ++step) {
    Batch batch = randomBatch(rng, b, s, config->vocabSize);
    std::vector<runtime::HostTensor> ids = {
        {{b, s}, runtime::DType::I32, batch.tokenIds.data()},
        {{b, s}, runtime::DType::I32, batch.labelIds.data()}};
    // Every gradient at the runtime's current parameters, before the update.
    ASSERT_TRUE((*executor)->run("train_step", ids).ok());
    auto grads = reference::evaluate(
        programs->lookupSymbol<mlir::func::FuncOp>("train_step"),
        {batch.tokens, batch.labels},
        [&](ParamOp p) -> mlir::FailureOr<Tensor> {
          std::vector<float> v = param(p.getName().str());
          return Tensor(testutil::shapeOf(p),
                        std::vector<double>(v.begin(), v.end()));
        },
        // FP8 runs round as f32 values do, so fewer sums straddle an FP8
        // rounding point than against f64's.
        quantized ? reference::Precision::F32 : reference::Precision::F64);
    ASSERT_TRUE(mlir::succeeded(grads));
    auto gradFunc = programs->lookupSymbol<mlir::func::FuncOp>("train_step");
    // bf16 rounds every op; its values are compared through the loss.
    for (unsigned r = 1; !narrow && r < gradFunc.getNumResults(); ++r) {
      std::string pname =
          gradFunc.getResultAttrOfType<mlir::StringAttr>(r, "weft.grad").str();
      auto got = (*executor)->output("train_step", "grad:" + pname);
      ASSERT_TRUE(got.ok()) << got.status();
      const std::vector<double> &want = (*grads)[r].data;
      double scale = 0;
      for (double g : want)
        scale = std::max(scale, std::fabs(g));
      if (quantized) {
        double diff = 0, norm = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          diff += ((*got)[i] - want[i]) * ((*got)[i] - want[i]);
          norm += want[i] * want[i];
        }
        double relative = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
        worstRelative = std::max(worstRelative, relative);
        EXPECT_LE(relative, fp8Tolerance(fp8).gradient)
            << "step " << step << " grad of " << pname;
        continue;
      }
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(close((*got)[i], want[i], 1e-4, 1e-5 * scale))
            << "step " << step << " grad of " << pname << "[" << i
            << "]: " << (*got)[i] << " vs " << want[i];
    }
    float lr = static_cast<float>(schedule.at(step)), stepNumber = step;
    // One step each from the same parameters and state.
    reference::Assignments current;
    for (const runtime::sched::Param &p : (*executor)->bundle().params) {
      std::vector<float> v = param(p.name);
      current[p.name] = Tensor(trainer.values().at(p.name).shape,
                               std::vector<double>(v.begin(), v.end()));
    }
    trainer.reset(std::move(current), step - 1);
    absl::Status st =
        (*executor)->run("step", {ids[0],
                                  ids[1],
                                  {{}, runtime::DType::F32, &lr},
                                  {{}, runtime::DType::F32, &stepNumber}});
    ASSERT_TRUE(st.ok()) << st;
    auto expected = trainer.step(batch.tokens, batch.labels, lr);
    ASSERT_TRUE(mlir::succeeded(expected));
    float loss = *(*executor)->scalarOutput("step", "loss");
    float norm = *(*executor)->scalarOutput("step", "grad_norm");
    EXPECT_TRUE(close(loss, expected->loss,
                      narrow      ? 1e-2
                      : quantized ? 1e-4
                                  : 1e-5,
                      0))
        << loss << " vs " << expected->loss;
    EXPECT_TRUE(close(norm, expected->gradNorm,
                      narrow      ? 2e-2
                      : quantized ? fp8Tolerance(fp8).gradNorm
                                  : 1e-4,
                      0))
        << norm << " vs " << expected->gradNorm;

    // Updated parameters agree to 0.1% of the step size. Adam divides by
    // sqrt(v): where a gradient is at rounding-noise level (a key bias,
    // which softmax ignores, or any gradient below 1e-4 of the largest, where
    // fp32 accumulation order moves it by percents) the noise becomes a
    // full-size step of either sign, so those elements are only held to the
    // step size.
    for (unsigned r = 1; !narrow && !quantized && r < gradFunc.getNumResults();
         ++r) {
      std::string pname =
          gradFunc.getResultAttrOfType<mlir::StringAttr>(r, "weft.grad").str();
      const std::vector<double> &g = (*grads)[r].data;
      double gmax = 0;
      for (double x : g)
        gmax = std::max(gmax, std::fabs(x));
      std::vector<float> got = param(pname);
      const std::vector<double> &want = trainer.values().at(pname).data;
      for (size_t i = 0; i < want.size(); ++i, ++checked) {
        bool noise = std::fabs(g[i]) <= 1e-4 * gmax;
        ASSERT_TRUE(close(got[i], want[i], 1e-6, noise ? 2.5 * lr : 1e-3 * lr))
            << "step " << step << " " << pname << "[" << i << "]: " << got[i]
            << " vs " << want[i] << " (gradient " << g[i] << ")";
      }
    }
  }
  if (!narrow && !quantized) // bf16 runs compare through the loss only.
    EXPECT_GT(checked, 10000);
  if (quantized)
    std::printf("%s fp8=%s: worst relative gradient error %.2e\n", name.c_str(),
                fp8.c_str(), worstRelative);
}
} // namespace

TEST(SchedExecutor, Gpt2TinyMatchesTheReferenceAfterThreeAdamWSteps) {
  checkParity("gpt2-tiny", false);
}
TEST(SchedExecutor, LlamaTinyMatchesTheReferenceAfterThreeAdamWSteps) {
  checkParity("llama-tiny", false);
}
TEST(SchedExecutor, MixtralTinyMatchesTheReferenceAfterThreeAdamWSteps) {
  checkParity("mixtral-tiny", false);
}
// A capacity of 0.75 drops pairs (each expert keeps at most 6 of the 32,
// 8 on average): the
// runtime's route drops the ones the evaluator's does. The load-balancing
// and z losses are on too.
TEST(SchedExecutor, MixtralTinyWithCapacityMatchesTheReference) {
  checkParity("mixtral-tiny-capacity", false);
}
// Each alloc's bytes are overwritten with NaN after its last use: a memory
// plan (or an executor) that let a live buffer share bytes with a dead one
// would change the results.
TEST(SchedExecutor, PoisoningFreedBuffersChangesNothing) {
  checkParity("gpt2-tiny", true);
}
// 100 positions span two 64-wide attention tiles, causal mask included.
TEST(SchedExecutor, LongSequencesCrossAttentionTiles) {
  checkParity("llama-tiny", false, 1, 100);
}
// bf16 compute with f32 master weights: the compiler's copies widen bf16
// values to f32 around each kernel and round results back, as the
// evaluator rounds.
TEST(SchedExecutor, Bf16MixedPrecisionMatchesTheReference) {
  checkParity("gpt2-tiny", false, 2, 8, "bf16");
}
// A GPU bundle: its linear layers are GEMMs with epilogues, which the CPU
// runs as sgemm and a loop (and the evaluator by their meaning).
TEST(SchedExecutor, GpuBundleWithGemmEpiloguesMatchesTheReference) {
  checkParity("gpt2-tiny", false, 2, 8, "f32", /*gpuBundle=*/true);
}
// FP8 weight GEMMs (weft-fp8), emulated: the runtime's quantization
// (Fp8Scaling.h on the bits) against the evaluator's (APFloat) under each
// recipe, on the tiny models' 64-wide GEMMs, and block-wise (which needs
// multiples of 128) on a 128-wide GPT over 128-token rows.
TEST(SchedExecutor, Fp8RecipesMatchTheReference) {
  for (const char *recipe :
       {"tensorwise", "tensorwise-delayed", "rowwise", "mxfp8"})
    checkParity("gpt2-tiny", false, 2, 8, "f32", false, recipe);
  checkParity("llama-tiny", false, 2, 8, "f32", false, "rowwise");
  // Expert GEMMs too (row-wise and MXFP8 scales: a scale per packed row,
  // one per expert's column or block).
  for (const char *recipe : {"rowwise", "mxfp8"})
    checkParity("mixtral-tiny", false, 2, 8, "f32", false, recipe);
  checkParity("gpt2-demo", false, 1, 128, "f32", false, "blockwise");
}
// Dropout from the config (embd_pdrop and resid_pdrop 0.1): both sides draw
// the masks from the same counter-based stream, moved on by the step
// counter each step (three steps, three masks).
TEST(SchedExecutor, DropoutFromTheConfigMatchesTheReference) {
  checkParity("gpt2-tiny-dropout", false);
}

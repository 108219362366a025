//===- loss_scale_test.cpp - fp16 dynamic loss scaling on the CPU ---------===//
//
// Llama-tiny in f16 compiled with a loss scale of 2^40: its gradients
// overflow f16, so the first steps are skipped (no parameter moves, the
// scale halves each time) until the scale fits; training then goes on, and
// after `window` clean steps in a row the scale doubles, until it overflows
// again mid-run. The run follows
// that state machine step by step through the step's loss_scale and
// skipped outputs, as weft-run's metrics report them.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/BundleData.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/train/TrainSchedule.h"
#include "test/runtime/TrainingJob.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace weft;

TEST(LossScaling, AnOverflowedStepIsSkippedAndTrainingRecovers) {
  testutil::Case setup("llama-tiny", "f16");
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(
      *context, "llama-tiny", {setup.batch, setup.seq, "f16", true});
  ASSERT_TRUE(module);
  TrainingOptions options = setup.options();
  options.lossScale = std::ldexp(1.0, 40);
  options.lossScaleWindow = 2;
  std::string dir = testutil::uniqueTempPath("loss-scale-v2");
  ASSERT_TRUE(mlir::succeeded(
      compileSchedBundle(*module, dir, options, llvm::json::Object{})));
  testutil::Trace trace;
  std::unique_ptr<runtime::SchedExecutor> exec =
      testutil::openExecutor(dir, nullptr, trace);
  ASSERT_TRUE(exec) << trace.failure;
  exec->initialize(5);
  auto steps = runtime::trainSteps(exec->bundle(), 0);
  ASSERT_TRUE(steps.ok()) << steps.status();
  auto weights = [&] {
    return *exec->param("model.layers.0.mlp.up_proj.weight");
  };

  std::vector<double> scales;
  std::vector<bool> skipped;
  std::vector<float> before = weights();
  bool moved = false;
  for (int s = 0; s < 40; ++s) {
    std::vector<int32_t> tokens = testutil::tokenIds(s, 0, setup.batch,
                                                     setup.seq, 3),
                         labels = testutil::tokenIds(s, 0, setup.batch,
                                                     setup.seq, 1);
    float lr = 1e-3f, number = static_cast<float>(s + 1);
    ASSERT_TRUE(runtime::runTrainSteps(*exec, *steps, tokens.data(),
                                       labels.data(), lr, number)
                    .ok());
    scales.push_back(*exec->scalarOutput(steps->reporter, "loss_scale"));
    skipped.push_back(*exec->scalarOutput(steps->reporter, "skipped") != 0);
    EXPECT_TRUE(std::isfinite(*exec->scalarOutput(steps->reporter, "loss")));
    std::vector<float> after = weights();
    // A skipped step changes no parameter, bit for bit; a clean one does.
    EXPECT_EQ(testutil::worstError(before, after) == 0, skipped.back())
        << "step " << s + 1;
    moved |= !skipped.back();
    before = after;
  }
  // 2^40 overflows f16: the first step is skipped; training recovers and
  // ends on clean steps.
  EXPECT_EQ(scales.front(), std::ldexp(1.0, 40));
  EXPECT_TRUE(skipped.front());
  EXPECT_TRUE(moved);
  EXPECT_FALSE(skipped.back());
  // With a window of 2 the scale doubles back up until it overflows again:
  // some step overflows at a scale just doubled, mid-run, and training
  // recovers from it too (with a window longer than the run no scale
  // doubles and this fails).
  bool overflowAfterDoubling = false;
  for (size_t s = 1; s + 1 < skipped.size(); ++s)
    overflowAfterDoubling |= skipped[s] && scales[s] > scales[s - 1];
  EXPECT_TRUE(overflowAfterDoubling);
  // The state machine: halve after an overflow, double after 2 clean steps
  // in a row, else keep.
  int clean = 0;
  for (size_t s = 0; s + 1 < scales.size(); ++s) {
    double want = scales[s];
    if (skipped[s]) {
      want /= 2;
      clean = 0;
    } else if (++clean == 2) {
      want *= 2;
      clean = 0;
    }
    EXPECT_EQ(scales[s + 1], want) << "after step " << s + 1;
  }
}

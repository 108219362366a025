//===- adamw_test.cpp - the AdamW step against hand-written updates -------===//

#include "compiler/reference/Trainer.h"
#include "frontend/models/ModelConfig.h"
#include "passes/autodiff/Passes.h"
#include "passes/optimizer/Passes.h"
#include "runtime/train/Schedule.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Verifier.h"

#include <cmath>
#include <fstream>

using namespace weft;
using reference::Tensor;

namespace {
/// loss = sum(w * C) + sum(b * c): the gradients are the constants C and c.
const char *kLinear = R"(
  func.func @forward(%t: tensor<1x1xi32>, %l: tensor<1x1xi32>) -> tensor<f32> {
    %w = weft.param "w" init(normal, 1.0) : tensor<2x3xf32>
    %b = weft.param "b" init(normal, 1.0) : tensor<3xf32>
    %C = weft.constant dense<[[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]> : tensor<2x3xf32>
    %c = weft.constant dense<[2.0, -0.5, 4.0]> : tensor<3xf32>
    %wc = weft.mul %w, %C : tensor<2x3xf32>
    %bc = weft.mul %b, %c : tensor<3xf32>
    %s1 = weft.reduce_sum %wc dims [0, 1] : tensor<2x3xf32>
    %s2 = weft.reduce_sum %bc dims [0] : tensor<3xf32>
    %loss = weft.add %s1, %s2 : tensor<f32>
    return %loss : tensor<f32>
  })";
const std::vector<double> kC = {1.0, -2.0, 0.5, 3.0, 0.25, -1.0};
const std::vector<double> kc = {2.0, -0.5, 4.0};

mlir::func::FuncOp buildStep(mlir::ModuleOp module, const AdamWConfig &config) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  auto grad = differentiate(forward, "train_step");
  EXPECT_TRUE(mlir::succeeded(grad));
  auto step = buildAdamWStep(*grad, "step", config);
  EXPECT_TRUE(mlir::succeeded(step));
  EXPECT_TRUE(mlir::succeeded(mlir::verify(module)));
  return *step;
}

/// An independent AdamW for one tensor with a constant gradient g. The step
/// holds its hyperparameters as f32 constants, so this rounds them the same
/// way (f() below) and otherwise computes in double.
struct ReferenceAdam {
  AdamWConfig c;
  bool decay;
  std::vector<double> p, m, v;
  static double f(double x) { return static_cast<float>(x); }
  void step(const std::vector<double> &g, double lr, int t, double clip) {
    double bc1 = 1 - std::exp(t * f(std::log(c.beta1)));
    double bc2 = 1 - std::exp(t * f(std::log(c.beta2)));
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[i] * clip;
      m[i] = f(c.beta1) * m[i] + f(1 - c.beta1) * gi;
      v[i] = f(c.beta2) * v[i] + f(1 - c.beta2) * gi * gi;
      if (decay)
        p[i] *= 1 - lr * f(c.weightDecay);
      p[i] -= lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + f(c.eps));
    }
  }
};

void expectValues(const Tensor &t, const std::vector<double> &expected) {
  ASSERT_EQ(t.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.data[i], expected[i], 1e-12) << i;
}
} // namespace

TEST(AdamW, ThreeStepsMatchAnIndependentImplementation) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, kLinear);
  AdamWConfig config;
  config.maxGradNorm = 0; // Off: checked separately.
  reference::Trainer trainer(buildStep(*module, config), /*seed=*/7, {},
                             reference::Precision::F64);
  ReferenceAdam w{config, true, trainer.values().at("w").data,
                  std::vector<double>(6), std::vector<double>(6)};
  ReferenceAdam b{config, false, trainer.values().at("b").data,
                  std::vector<double>(3), std::vector<double>(3)};
  Tensor ids({1, 1}, {0});
  for (int t = 1; t <= 3; ++t) {
    double lr = 0.01 * t;
    auto metrics = trainer.step(ids, ids, lr);
    ASSERT_TRUE(mlir::succeeded(metrics));
    w.step(kC, lr, t, 1.0);
    b.step(kc, lr, t, 1.0);
    expectValues(trainer.values().at("w"), w.p);
    expectValues(trainer.values().at("b"), b.p);
    expectValues(trainer.values().at("w.exp_avg"), w.m);
    expectValues(trainer.values().at("b.exp_avg_sq"), b.v);
  }
}

TEST(AdamW, ClipsByTheGlobalNorm) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, kLinear);
  AdamWConfig config;
  config.maxGradNorm = 1.5;
  reference::Trainer trainer(buildStep(*module, config), 7, {},
                             reference::Precision::F64);
  double sq = 0;
  for (double x : kC)
    sq += x * x;
  for (double x : kc)
    sq += x * x;
  double norm = std::sqrt(sq);
  double clip = ReferenceAdam::f(1.5) / (norm + ReferenceAdam::f(1e-6));
  Tensor ids({1, 1}, {0});
  auto metrics = trainer.step(ids, ids, 0.01);
  ASSERT_TRUE(mlir::succeeded(metrics));
  EXPECT_NEAR(metrics->gradNorm, norm, 1e-12);
  // The first moment holds (1 - beta1) times the clipped gradient.
  std::vector<double> m;
  for (double x : kC)
    m.push_back(ReferenceAdam::f(1 - config.beta1) * x * clip);
  expectValues(trainer.values().at("w.exp_avg"), m);
}

TEST(AdamW, Schedule) {
  runtime::LrSchedule s{1e-3, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_NEAR(s.at(60), 1e-4 + 0.5 * 9e-4, 1e-15); // Half-way down the cosine.
  EXPECT_NEAR(s.at(110), 1e-4, 1e-15);
  EXPECT_NEAR(s.at(500), 1e-4, 1e-15);
  runtime::LrSchedule constant{5e-4, 0, 0, 0.1};
  EXPECT_DOUBLE_EQ(constant.at(3), 5e-4);
}

TEST(AdamW, ReferenceTrainingLowersTheLossOfATinyGpt) {
  auto context = testutil::makeContext();
  auto module =
      testutil::buildExampleModel(*context, "gpt2-tiny", {4, 16, "f32"});
  ASSERT_TRUE(module);
  AdamWConfig adam;
  reference::Trainer trainer(buildStep(*module, adam), 1);

  // Learn a short repeating text: windows at random offsets.
  std::string text = "the quick brown fox jumps over the lazy dog. ";
  std::mt19937 rng(3);
  std::uniform_int_distribution<size_t> offset(0, text.size() - 1);
  runtime::LrSchedule schedule{1e-2, 5, 40, 0.1};
  double first = 0, last = 0;
  for (int s = 1; s <= 40; ++s) {
    Tensor tokens = Tensor::zeros({4, 16}), labels = Tensor::zeros({4, 16});
    for (int r = 0; r < 4; ++r) {
      size_t start = offset(rng);
      for (int i = 0; i < 16; ++i) {
        tokens.data[r * 16 + i] =
            static_cast<unsigned char>(text[(start + i) % text.size()]);
        labels.data[r * 16 + i] =
            static_cast<unsigned char>(text[(start + i + 1) % text.size()]);
      }
    }
    auto metrics = trainer.step(tokens, labels, schedule.at(s));
    ASSERT_TRUE(mlir::succeeded(metrics));
    EXPECT_GT(metrics->gradNorm, 0);
    (s == 1 ? first : last) = metrics->loss;
  }
  EXPECT_NEAR(first, std::log(256.0), 0.1);
  EXPECT_LT(last, 2.0) << "loss went from " << first << " to " << last;
}

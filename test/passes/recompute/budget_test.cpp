//===- budget_test.cpp - the budget search's model against brute force ----===//
//
// orderBudgetSteps (passes/recompute/Budget.h) on made-up models: layers
// whose selective or full option frees nothing, costs nothing, or frees
// more per FLOP than the other, and working sets that differ by policy.
// Every per-layer choice is enumerated for the model's best.
//
//===----------------------------------------------------------------------===//

#include "passes/recompute/Budget.h"
#include "test/passes/recompute/BudgetBruteForce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

using namespace weft;

namespace {
BudgetModel randomModel(std::mt19937 &rng, size_t layers) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  BudgetModel m;
  m.noneArena = 1000;
  m.workingSet = {0, 150 * u(rng), 150 * u(rng)};
  for (size_t l = 0; l < layers; ++l) {
    BudgetModel::Layer layer;
    // Selective frees up to 100 for up to 20 FLOPs, full up to 250 for up
    // to 400; now and then an option frees nothing or costs nothing.
    layer.freed = {0, u(rng) < 0.1 ? 0.0 : 100 * u(rng),
                   u(rng) < 0.1 ? 0.0 : 250 * u(rng)};
    layer.flops = {0, u(rng) < 0.1 ? 0.0 : 20 * u(rng),
                   u(rng) < 0.1 ? 0.0 : 400 * u(rng)};
    m.layers.push_back(layer);
  }
  return m;
}
} // namespace

// Whenever some choice fits the model, the pick fits, and its FLOPs exceed
// the best choice's by at most one layer's costliest option. Most picks
// are the best outright (465 of 600); a greedy that did not order its steps by
// bytes freed per FLOP (or reversed them) would miss that.
TEST(RecomputeBudget, PicksWithinOneLayerOfTheModelsBest) {
  std::mt19937 rng(5);
  int fitting = 0, exact = 0;
  for (int trial = 0; trial < 600; ++trial) {
    size_t layers = 1 + trial % 6;
    BudgetModel model = randomModel(rng, layers);
    double lowest = std::numeric_limits<double>::infinity(), costliest = 0;
    testutil::forEachBudgetChoice(layers, [&](const std::vector<int> &c) {
      lowest = std::min(lowest, model.arena(c));
    });
    for (const BudgetModel::Layer &l : model.layers)
      costliest = std::max({costliest, l.flops[1], l.flops[2]});
    double budget =
        lowest + std::uniform_real_distribution<double>(0.0, 1.0)(rng) *
                     (model.noneArena - lowest);
    double best = testutil::budgetModelsBest(model, budget);
    BudgetSteps order = orderBudgetSteps(model, budget);
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    ASSERT_LT(best, std::numeric_limits<double>::infinity());
    ++fitting;
    ASSERT_LT(order.fits, order.steps.size() + 1);
    std::vector<int> pick = order.choice(layers, order.fits);
    EXPECT_LE(model.arena(pick), budget);
    double flops = model.flops(pick);
    EXPECT_LE(flops, best + costliest * (1 + 1e-12));
    exact += flops <= best * (1 + 1e-12);
  }
  EXPECT_EQ(fitting, 600);
  EXPECT_GT(exact, fitting * 7 / 10) << exact << " of " << fitting;
}

// By hand: layer 0's selective frees 10 for 1 FLOP and its full 30 for 10;
// layer 1's full frees 40 for 4, more per FLOP than its selective (5 for
// 2). Selective alone cannot reach 80 (100 - 15 + 5 = 90). Over both
// policies, layer 0's selective (10 per FLOP, listed first on the tie)
// comes before layer 1's full, and the pick would cost 5; the full-only
// class reaches 80 with layer 1's full alone (100 - 40 + 20), for 4: the
// model's best, which is what is picked.
TEST(RecomputeBudget, TheCheapestClassWins) {
  BudgetModel model;
  model.noneArena = 100;
  model.workingSet = {0, 5, 20};
  model.layers = {{{0, 10, 30}, {0, 1, 10}}, {{0, 5, 40}, {0, 2, 4}}};
  BudgetSteps order = orderBudgetSteps(model, 80);
  std::vector<int> pick = order.choice(2, order.fits);
  EXPECT_EQ(pick, (std::vector<int>{0, 2})) << order.fits;
  EXPECT_EQ(model.arena(pick), 80);
  EXPECT_EQ(model.flops(pick), 4);
  // Its later candidates: layer 0 full too, then nothing more.
  EXPECT_EQ(order.steps.size(), 2u);
  EXPECT_EQ(order.choice(2, 2), (std::vector<int>{2, 2}));
}

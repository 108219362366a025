//===- BudgetBruteForce.h - every per-layer choice of a budget model -*- C++
//-*-===//
//
// The oracle the budget search's tests compare against: every per-layer
// recomputation choice of a BudgetModel (passes/recompute/Budget.h),
// enumerated, and the least FLOPs of those that fit.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_PASSES_RECOMPUTE_BUDGETBRUTEFORCE_H
#define WEFT_TEST_PASSES_RECOMPUTE_BUDGETBRUTEFORCE_H

#include "passes/recompute/Budget.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace weft::testutil {

/// Calls `visit` with every per-layer choice of `layers` layers, each an
/// option index below kBudgetOptions, layer 0 the lowest base-3 digit.
template <typename Visit> void forEachBudgetChoice(size_t layers, Visit visit) {
  int64_t count = 1;
  for (size_t l = 0; l < layers; ++l)
    count *= kBudgetOptions;
  std::vector<int> choice(layers);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (size_t l = 0; l < layers; ++l, rest /= kBudgetOptions)
      choice[l] = static_cast<int>(rest % kBudgetOptions);
    visit(choice);
  }
}

/// The least FLOPs of a choice whose arena under `model` is at most
/// `budget`; infinity when none fits.
inline double budgetModelsBest(const BudgetModel &model, double budget) {
  double best = std::numeric_limits<double>::infinity();
  forEachBudgetChoice(model.layers.size(), [&](const std::vector<int> &c) {
    if (model.arena(c) <= budget)
      best = std::min(best, model.flops(c));
  });
  return best;
}

} // namespace weft::testutil

#endif // WEFT_TEST_PASSES_RECOMPUTE_BUDGETBRUTEFORCE_H

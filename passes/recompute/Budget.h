//===- Budget.h - a recomputation policy per layer under a memory budget --===//
//
// The model `--recompute budget=` searches when the layers are too many to
// plan every per-layer choice (compiler/Pipeline.cpp plans the candidate it
// gives). Pure arithmetic, so it is tested against brute force on made-up
// numbers (test/passes/recompute/budget_test.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_RECOMPUTE_BUDGET_H
#define WEFT_PASSES_RECOMPUTE_BUDGET_H

#include "passes/recompute/Passes.h"

#include "llvm/ADT/ArrayRef.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace weft {

/// A layer's options in the order the model indexes them: 0 none, 1
/// selective, 2 full. A per-tensor choice is none of them: -1 (the
/// per-layer search never makes one).
constexpr int kBudgetOptions = 3;
RecomputePolicy budgetPolicy(int option);
int budgetOption(RecomputePolicy policy);

/// The arena of a per-layer choice, as three uniform plannings (every layer
/// none, selective, full) measure it: none's arena, less what each layer's
/// option keeps below none (`freed`), plus the working set of the options
/// used (the recomputed values alive while a layer's backward runs: the
/// largest `workingSet` among them; none's is 0). Its cost: the layers'
/// options' recomputed FLOPs.
struct BudgetModel {
  struct Layer {
    std::array<double, kBudgetOptions> freed{}, flops{};
  };
  double noneArena = 0;
  std::array<double, kBudgetOptions> workingSet{};
  std::vector<Layer> layers;

  /// `choice[l]` is layer l's option.
  double arena(llvm::ArrayRef<int> choice) const;
  double flops(llvm::ArrayRef<int> choice) const;
};

/// The candidates the greedy orders: applying the first k steps (layer,
/// option) to every layer none gives candidate k, each freeing more memory
/// in the model for more FLOPs. `fits` is the first k the model says fits
/// (steps.size() when none does).
struct BudgetSteps {
  std::vector<std::pair<int64_t, int>> steps;
  size_t fits = 0;

  /// Candidate k's option per layer.
  std::vector<int> choice(size_t layers, size_t k) const;
};

/// Orders the steps toward a per-layer choice whose modelled arena is at
/// most `budget` for as few FLOPs as the model allows, to within one layer's
/// costliest option. Choosing an option per layer is a multiple-choice
/// knapsack, whose working set makes it nonlinear; within one class of
/// choices (selective only, full only, or both) the working set is
/// constant, and taking each layer's options on the upper convex hull of
/// (FLOPs, bytes freed), in order of bytes freed per FLOP over all layers,
/// until the model fits solves the class's linear relaxation but for the
/// last step. So the class's pick exceeds the class's best by at most that
/// step, and the cheapest of the three picks (the one returned) exceeds the
/// model's best by at most one layer's costliest option.
BudgetSteps orderBudgetSteps(const BudgetModel &model, double budget);

} // namespace weft

#endif // WEFT_PASSES_RECOMPUTE_BUDGET_H

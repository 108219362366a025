//===- Budget.cpp - a recomputation policy per layer under a memory budget ===//

#include "passes/recompute/Budget.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>

using namespace weft;

RecomputePolicy weft::budgetPolicy(int option) {
  return option == 0   ? RecomputePolicy::None
         : option == 1 ? RecomputePolicy::Selective
                       : RecomputePolicy::Full;
}

int weft::budgetOption(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::None:
    return 0;
  case RecomputePolicy::Selective:
    return 1;
  case RecomputePolicy::Full:
    return 2;
  case RecomputePolicy::Tensors:
    break;
  }
  return -1;
}

double BudgetModel::arena(llvm::ArrayRef<int> choice) const {
  assert(choice.size() == layers.size());
  double arena = noneArena, set = 0;
  for (auto [layer, option] : llvm::zip_equal(layers, choice)) {
    arena -= layer.freed[option];
    set = std::max(set, workingSet[option]);
  }
  return arena + set;
}

double BudgetModel::flops(llvm::ArrayRef<int> choice) const {
  assert(choice.size() == layers.size());
  double flops = 0;
  for (auto [layer, option] : llvm::zip_equal(layers, choice))
    flops += layer.flops[option];
  return flops;
}

std::vector<int> BudgetSteps::choice(size_t layers, size_t k) const {
  std::vector<int> c(layers, 0);
  for (size_t i = 0; i < k && i < steps.size(); ++i)
    c[steps[i].first] = steps[i].second;
  return c;
}

namespace {
/// One step of a layer: to `option`, freeing `bytes` more for `flops` more.
struct Step {
  int64_t layer = 0;
  int option = 0;
  double bytes = 0, flops = 0;
  /// Bytes freed per FLOP (infinite when it frees memory for nothing).
  double efficiency() const {
    return flops > 0 ? bytes / flops : std::numeric_limits<double>::infinity();
  }
};

/// Layer `l`'s steps among the `allowed` options: from none, the options on
/// the upper convex hull of (FLOPs, bytes freed), each step freeing less
/// per FLOP than the one before. An option that frees no more than one
/// already taken is never a step. On equal finite efficiency the nearer
/// option is the step (the farther one follows on the same line), so the
/// last step the greedy takes is as small as it can be; freeing memory for
/// no FLOPs, the farther option wins outright.
void layerSteps(int64_t l, const BudgetModel::Layer &layer,
                llvm::ArrayRef<bool> allowed, std::vector<Step> &out) {
  int at = 0;
  while (true) {
    std::optional<Step> best;
    for (int o = 1; o < kBudgetOptions; ++o) {
      if (!allowed[o] || layer.freed[o] <= layer.freed[at])
        continue;
      Step step{l, o, layer.freed[o] - layer.freed[at],
                std::max(0.0, layer.flops[o] - layer.flops[at])};
      double e = step.efficiency(), b = best ? best->efficiency() : 0;
      bool infinite = e == std::numeric_limits<double>::infinity();
      if (!best || e > b ||
          (e == b &&
           (infinite ? step.bytes > best->bytes : step.bytes < best->bytes)))
        best = step;
    }
    if (!best)
      return;
    out.push_back(*best);
    at = best->option;
  }
}
} // namespace

BudgetSteps weft::orderBudgetSteps(const BudgetModel &model, double budget) {
  // Recomputing nothing needs no working set.
  if (model.noneArena <= budget)
    return BudgetSteps{};
  // The classes: which options besides none a choice uses. Within one the
  // working set is constant (the largest of its options').
  const std::array<bool, kBudgetOptions> classes[] = {
      {true, true, false}, {true, false, true}, {true, true, true}};
  std::optional<std::pair<double, BudgetSteps>> best;
  BudgetSteps widest; // The last class's, if no class fits.
  for (const auto &allowed : classes) {
    double set = 0;
    for (int o = 1; o < kBudgetOptions; ++o)
      if (allowed[o])
        set = std::max(set, model.workingSet[o]);
    std::vector<Step> steps;
    for (auto [l, layer] : llvm::enumerate(model.layers))
      layerSteps(static_cast<int64_t>(l), layer, allowed, steps);
    // A layer's own steps are in this order already; a stable sort keeps
    // them so on ties.
    llvm::stable_sort(steps, [](const Step &a, const Step &b) {
      return a.efficiency() > b.efficiency();
    });
    BudgetSteps order;
    double freed = 0;
    std::optional<size_t> first; // The first k the model says fits.
    for (auto [i, step] : llvm::enumerate(steps)) {
      order.steps.push_back({step.layer, step.option});
      freed += step.bytes;
      if (!first && model.noneArena - freed + set <= budget)
        first = i + 1;
    }
    order.fits = first.value_or(order.steps.size());
    if (first) {
      double flops = model.flops(order.choice(model.layers.size(), *first));
      if (!best || flops < best->first)
        best = {flops, order};
    }
    widest = std::move(order);
  }
  return best ? best->second : widest;
}

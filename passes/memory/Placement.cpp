//===- Placement.cpp - static offsets for buffers with lifetimes ----------===//

#include "passes/memory/Placement.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace weft {

Placement placeBuffers(llvm::ArrayRef<Lifetime> buffers, int64_t alignment) {
  llvm::SmallVector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first, then earliest; the index breaks the remaining ties.
  llvm::sort(order, [&](size_t a, size_t b) {
    const Lifetime &x = buffers[a], &y = buffers[b];
    return std::make_tuple(-x.bytes, x.first, a) <
           std::make_tuple(-y.bytes, y.first, b);
  });
  Placement plan;
  plan.offsets.assign(buffers.size(), 0);
  llvm::SmallVector<size_t> placed;
  for (size_t i : order) {
    const Lifetime &buffer = buffers[i];
    llvm::SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed) {
      const Lifetime &other = buffers[j];
      if (other.first <= buffer.last && buffer.first <= other.last)
        taken.push_back({plan.offsets[j], plan.offsets[j] + other.bytes});
    }
    llvm::sort(taken);
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + buffer.bytes <= begin)
        break;
      offset = std::max(offset, (end + alignment - 1) / alignment * alignment);
    }
    plan.offsets[i] = offset;
    plan.peak = std::max(plan.peak, offset + buffer.bytes);
    placed.push_back(i);
  }
  return plan;
}

} // namespace weft

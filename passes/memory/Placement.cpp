//===- Placement.cpp - static offsets for buffers with lifetimes ----------===//

#include "passes/memory/Placement.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
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
    llvm::SmallVector<size_t> live = {i};
    for (size_t j : placed) {
      const Lifetime &other = buffers[j];
      if (other.first <= buffer.last && buffer.first <= other.last) {
        taken.push_back({plan.offsets[j], plan.offsets[j] + other.bytes});
        live.push_back(j);
      }
    }
    llvm::sort(taken);
    // Placed buffers end at most at kMaxArenaBytes and each is at most that
    // big, so these sums stay below 2^63.
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + buffer.bytes <= begin)
        break;
      offset = std::max(offset, (end + alignment - 1) / alignment * alignment);
    }
    if (offset + buffer.bytes > kMaxArenaBytes) {
      plan.tooLarge = *llvm::max_element(live, [&](size_t a, size_t b) {
        return buffers[a].bytes < buffers[b].bytes;
      });
      // Saturating at int64's end, before any sum can overflow.
      constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
      for (size_t j : live)
        plan.liveBytes += std::min(buffers[j].bytes, kEnd - plan.liveBytes);
      plan.liveCount = live.size();
      return plan;
    }
    plan.offsets[i] = offset;
    plan.peak = std::max(plan.peak, offset + buffer.bytes);
    placed.push_back(i);
  }
  return plan;
}

std::string Placement::tooLargeMessage(llvm::ArrayRef<Lifetime> buffers) const {
  std::string total =
      liveBytes == std::numeric_limits<int64_t>::max()
          ? "2^63 bytes or more"
          : std::to_string(liveBytes) +
                (liveBytes > kMaxArenaBytes ? " bytes" : " bytes once aligned");
  return "this value's buffer of " + std::to_string(buffers[*tooLarge].bytes) +
         " bytes and the " + std::to_string(liveCount - 1) +
         " others live at the same time need " + total +
         ": larger than a memory arena may be (at most 2^62 bytes)";
}

} // namespace weft

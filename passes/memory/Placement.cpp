//===- Placement.cpp - static offsets for buffers with lifetimes ----------===//

#include "passes/memory/Placement.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

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
  if (buffers.empty())
    return plan;
  // Placed buffers by the spans of positions they are live in, so a buffer
  // looks only at those whose spans meet its own, not at every one placed
  // before it (a step of 12,000 buffers otherwise takes a second here).
  int64_t begin = std::numeric_limits<int64_t>::max(),
          end = std::numeric_limits<int64_t>::min();
  for (const Lifetime &b : buffers) {
    assert(0 <= b.first && b.first <= b.last && "a lifetime is a range");
    begin = std::min(begin, b.first);
    end = std::max(end, b.last);
  }
  constexpr int64_t kSpans = 512;
  int64_t width = (end - begin) / kSpans + 1;
  std::vector<llvm::SmallVector<size_t, 8>> bySpan(
      static_cast<size_t>((end - begin) / width + 1));
  // Where each placed buffer was placed in turn (-1: not yet), which orders
  // the buffers met (as a scan of all placed ones would) and drops the
  // repeats of one met in several spans.
  std::vector<int64_t> turn(buffers.size(), -1), seen(buffers.size(), -1);
  llvm::SmallVector<size_t> placed; // In the order they were placed.
  for (size_t i : order) {
    const Lifetime &buffer = buffers[i];
    llvm::SmallVector<std::pair<int64_t, int64_t>> taken;
    llvm::SmallVector<size_t> live;
    auto meet = [&](size_t j) {
      const Lifetime &other = buffers[j];
      if (seen[j] == int64_t(i) || other.first > buffer.last ||
          buffer.first > other.last)
        return;
      seen[j] = int64_t(i);
      taken.push_back({plan.offsets[j], plan.offsets[j] + other.bytes});
      live.push_back(j);
    };
    int64_t firstSpan = (buffer.first - begin) / width,
            lastSpan = (buffer.last - begin) / width;
    // Long-lived buffers sit in many spans: where the spans' lists hold
    // more entries than there are placed buffers, scan those instead.
    size_t listed = 0;
    for (int64_t s = firstSpan; s <= lastSpan; ++s)
      listed += bySpan[s].size();
    if (listed > placed.size()) {
      for (size_t j : placed)
        meet(j);
    } else {
      for (int64_t s = firstSpan; s <= lastSpan; ++s)
        for (size_t j : bySpan[s])
          meet(j);
    }
    llvm::sort(taken);
    // Placed buffers end at most at kMaxArenaBytes and each is at most that
    // big, so these sums stay below 2^63.
    int64_t offset = 0;
    for (auto [start, stop] : taken) {
      if (offset + buffer.bytes <= start)
        break;
      offset = std::max(offset, (stop + alignment - 1) / alignment * alignment);
    }
    if (offset + buffer.bytes > kMaxArenaBytes) {
      llvm::sort(live, [&](size_t a, size_t b) { return turn[a] < turn[b]; });
      live.insert(live.begin(), i);
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
    turn[i] = static_cast<int64_t>(placed.size());
    placed.push_back(i);
    for (int64_t s = firstSpan; s <= lastSpan; ++s)
      bySpan[s].push_back(i);
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

//===- Placement.h - static offsets for buffers with lifetimes -*- C++ -*-===//
//
// The placement algorithm of Weft's memory plan (weft-sched-plan-memory on
// sched programs; weft-sched-arenas gives weft functions its arenas): buffers
// are placed largest first at the lowest aligned offset that overlaps no placed
// buffer whose lifetime intersects theirs, so two buffers share bytes only
// if their lifetimes are disjoint.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_MEMORY_PLACEMENT_H
#define WEFT_PASSES_MEMORY_PLACEMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

struct Lifetime {
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // Positions, 0 <= first <= last, inclusive.
};

/// An arena holds at most 2^62 bytes, as one tensor may (Weft_TensorOf), so
/// no offset or end computed from input overflows int64.
constexpr int64_t kMaxArenaBytes = int64_t(1) << 62;

struct Placement {
  llvm::SmallVector<int64_t> offsets; // One per lifetime, in input order.
  int64_t peak = 0;                   // Bytes of the arena.
  /// Set when the buffers do not fit in kMaxArenaBytes: the largest of the
  /// first buffer that did not fit and those live with it (the likely
  /// culprit to name), their bytes together (saturating at int64's end)
  /// and how many they are. Offsets are then
  /// incomplete.
  std::optional<size_t> tooLarge;
  int64_t liveBytes = 0;
  size_t liveCount = 0;

  /// With `tooLarge`: what to say at that buffer's op.
  std::string tooLargeMessage(llvm::ArrayRef<Lifetime> buffers) const;
};

/// Places `buffers` (ties in size keep their input order, so the plan is
/// the same on every run) at multiples of `alignment`.
Placement placeBuffers(llvm::ArrayRef<Lifetime> buffers, int64_t alignment);

} // namespace weft

#endif // WEFT_PASSES_MEMORY_PLACEMENT_H

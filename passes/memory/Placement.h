//===- Placement.h - static offsets for buffers with lifetimes -*- C++ -*-===//
//
// The one placement algorithm of Weft's memory plans (weft-memory-plan on
// weft functions, weft-sched-plan-memory on sched programs): buffers are
// placed largest first at the lowest aligned offset that overlaps no placed
// buffer whose lifetime intersects theirs, so two buffers share bytes only
// if their lifetimes are disjoint.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_MEMORY_PLACEMENT_H
#define WEFT_PASSES_MEMORY_PLACEMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace weft {

struct Lifetime {
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // Positions, inclusive.
};

struct Placement {
  llvm::SmallVector<int64_t> offsets; // One per lifetime, in input order.
  int64_t peak = 0;                   // Bytes of the arena.
};

/// Places `buffers` (ties in size keep their input order, so the plan is
/// the same on every run) at multiples of `alignment`.
Placement placeBuffers(llvm::ArrayRef<Lifetime> buffers, int64_t alignment);

} // namespace weft

#endif // WEFT_PASSES_MEMORY_PLACEMENT_H

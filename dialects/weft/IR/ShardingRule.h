//===- ShardingRule.h - how an op's dimensions may split --------*- C++ -*-===//
//
// A sharding rule names the independent iteration "factors" of an op (as
// Shardy does) and maps every operand and result dimension to one factor, or
// to none when that dimension must stay whole. Splitting a factor over mesh
// axes splits every dimension mapped to it the same way; a factor that maps to
// no result dimension is a reduction, whose split leaves partial sums that a
// collective must combine. Propagation reads rules; it never looks at ops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_WEFT_IR_SHARDINGRULE_H
#define WEFT_DIALECTS_WEFT_IR_SHARDINGRULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace weft {

struct ShardingRule {
  /// A dimension no factor may split.
  static constexpr int64_t kWhole = -1;

  llvm::SmallVector<int64_t> factorSizes;
  /// Per factor: a split must leave each rank a whole number of these
  /// elements of every dimension of the factor's size (an FP8 tile of 128
  /// is never cut across ranks); 1 for most.
  llvm::SmallVector<int64_t> factorGranules;
  llvm::SmallVector<llvm::SmallVector<int64_t>> operands, results;
  /// The op averages over its reduction factors (reduce_mean, the mean
  /// cross-entropy) rather than summing, so partial results combine by mean.
  bool meanReduction = false;
  /// The op takes the maximum over its reduction factors (FP8 block
  /// maxima), so partial results combine by a max all-reduce.
  bool maxReduction = false;
  /// Factors the op may have split and then combines itself, communicating
  /// over the split's axes (the vocabulary of a vocabulary-parallel
  /// cross-entropy): splitting one leaves the result whole, not partial.
  llvm::SmallVector<int64_t> selfCombined;
  /// The factor indexed by token ids or labels (an embedding's or
  /// cross-entropy's vocabulary), or kWhole: split, the op must know which
  /// block it holds, which partitioning records as `weft.vocab_axes`.
  int64_t vocabFactor = kWhole;

  /// Adds a factor of `size` and returns its index.
  int64_t addFactor(int64_t size, int64_t granule = 1) {
    factorSizes.push_back(size);
    factorGranules.push_back(granule);
    return static_cast<int64_t>(factorSizes.size()) - 1;
  }
  /// Adds one factor per size and returns their indices.
  llvm::SmallVector<int64_t> addFactors(llvm::ArrayRef<int64_t> sizes) {
    llvm::SmallVector<int64_t> factors;
    for (int64_t size : sizes)
      factors.push_back(addFactor(size));
    return factors;
  }
  /// Whether `count` ranks may split factor `f` where it is a dimension of
  /// `size` elements: the size divides, and a dimension of the factor's
  /// own size into whole granules.
  bool splits(int64_t f, int64_t size, int64_t count) const {
    if (size % count != 0)
      return false;
    return size != factorSizes[f] || (size / count) % factorGranules[f] == 0;
  }
  /// A factor that appears in operands but in no result.
  bool isReduction(int64_t factor) const;
  /// "([i, j], [j, k]) -> ([i, k]) {i=8, j=64, k=256} reduction={j}", with
  /// "-" for whole dimensions; factors are lettered i, j, k, ... in order,
  /// a granule after a slash ("j=256/128").
  std::string str() const;
};

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_IR_SHARDINGRULE_H

//===- Permutation.h - a keyed shuffle of [0, n) in O(1) memory -*- C++ -*-===//
//
// An epoch visits every sequence of a dataset once, in an order that looks
// random and is a pure function of (seed, epoch). Shuffling an index array
// would take O(n) memory and time per epoch, and the array would have to be
// saved to resume. A keyed bijection computes the order one position at a
// time instead: a balanced Feistel network on the smallest even-bit power
// of two at or above n (any round function makes it a bijection), with
// cycle-walking (apply it again while the value is >= n) to stay inside
// [0, n). Fewer than four steps of the walk are expected, since the power
// of two is below 4n.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DATA_PERMUTATION_H
#define WEFT_RUNTIME_DATA_PERMUTATION_H

#include <cstdint>

namespace weft::runtime {

class KeyedPermutation {
public:
  /// A permutation of [0, n) (n from 1 to 2^62) chosen by `key`.
  KeyedPermutation(uint64_t n, uint64_t key) : n(n), key(key) {
    int bits = 2;
    while (bits < 62 && (uint64_t(1) << bits) < n)
      ++bits;
    half = (bits + 1) / 2;
    mask = (uint64_t(1) << half) - 1;
  }

  /// The value at position `i` (< n).
  uint64_t operator()(uint64_t i) const {
    uint64_t x = i;
    do
      x = feistel(x);
    while (x >= n);
    return x;
  }

  uint64_t size() const { return n; }

private:
  static uint64_t mix(uint64_t z) { // SplitMix64's finalizer.
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t feistel(uint64_t x) const {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      uint64_t f =
          mix(key ^ mix(right + (round + 1) * 0x9E3779B97F4A7C15ull)) & mask;
      uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    return (left << half) | right;
  }

  uint64_t n, key, mask;
  int half;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DATA_PERMUTATION_H

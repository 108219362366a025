//===- Random.h - the counter-based generator every backend shares -*- C++
//-*-===//
//
// Dropout masks and parameter initialisation are pure functions of (seed,
// element index), so recomputation, every rank and every backend (the CPU
// evaluator, generated C++ and CUDA kernels) draw identical numbers without
// carrying generator state. The weft.dropout and weft.param descriptions
// quote this definition; changing it changes the meaning of every graph.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_RANDOM_H
#define WEFT_RUNTIME_SUPPORT_RANDOM_H

#include "runtime/support/CounterRng.h"

#include <cmath>
#include <cstdint>
#include <string_view>

namespace weft::runtime {

/// splitmix64's finaliser: a bijective 64-bit mix (CounterRng.h).
inline uint64_t splitmix64(uint64_t z) { return weft_splitmix64(z); }

/// A uniform draw in [0, 1) with 24 random bits (exact in fp32) for element
/// `index` of stream `seed` (CounterRng.h, which the GPU kernels share).
inline double uniform24(uint64_t seed, uint64_t index) {
  return weft_uniform24(seed, index);
}

/// A standard normal draw for element `index` (Box-Muller on draws 2i, 2i+1).
inline double normal(uint64_t seed, uint64_t index) {
  double u1 = uniform24(seed, 2 * index), u2 = uniform24(seed, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(1.0 - u1)) *
         std::cos(6.283185307179586 * u2);
}

/// FNV-1a: turns a parameter name into a stream id.
inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_RANDOM_H

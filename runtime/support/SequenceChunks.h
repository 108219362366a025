//===- SequenceChunks.h - context parallelism's load-balanced order -------===//
//
// Under context parallelism the sequence is cut into 2N equal chunks and
// cp rank i holds chunks i and 2N-1-i (Megatron-LM's and TransformerEngine's
// load balancing of the causal mask): the program holds the sequence in the
// order 0, 2N-1, 1, 2N-2, ..., N-1, N. The compiler writes positions in this
// order (weft-apply-plan) and the runtime reorders token rows so; both read
// it from here. Plain C++: the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_SEQUENCECHUNKS_H
#define WEFT_RUNTIME_SUPPORT_SEQUENCECHUNKS_H

#include <cstdint>

namespace weft {

/// The natural chunk held k-th among `chunks` (2N) load-balanced chunks.
inline int64_t heldChunk(int64_t k, int64_t chunks) {
  return k % 2 == 0 ? k / 2 : chunks - 1 - k / 2;
}

} // namespace weft

#endif // WEFT_RUNTIME_SUPPORT_SEQUENCECHUNKS_H

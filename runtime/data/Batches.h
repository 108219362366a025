//===- Batches.h - random training batches from a token stream -*- C++ -*-===//

#ifndef WEFT_RUNTIME_DATA_BATCHES_H
#define WEFT_RUNTIME_DATA_BATCHES_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

/// Draws [batch, seq] windows at random offsets of a token stream, with each
/// row's label the next token. The draw for step n is a pure function of
/// (seed, n), so the data position is part of the run state: resuming at
/// step n continues with exactly the batches an uninterrupted run would see.
class BatchSampler {
public:
  /// Fails, naming `label`, if the stream is shorter than one window plus
  /// its label or holds an id >= vocab.
  static absl::StatusOr<BatchSampler> create(std::vector<uint32_t> tokens,
                                             int64_t batch, int64_t seq,
                                             int64_t vocab, uint64_t seed,
                                             const std::string &label);

  /// Fills `tokens` and `labels` (batch * seq each) for 1-based step `step`.
  void fill(int64_t step, int32_t *tokens, int32_t *labels) const;

  const std::vector<uint32_t> &stream() const { return tokens_; }

private:
  BatchSampler() = default;
  std::vector<uint32_t> tokens_;
  int64_t batch_ = 0, seq_ = 0;
  uint64_t seed_ = 0;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DATA_BATCHES_H

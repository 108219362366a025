//===- Batches.cpp - random training batches from a token stream ----------===//

#include "runtime/data/Batches.h"

#include "runtime/data/TokenFile.h"
#include "runtime/support/Random.h"

#include "absl/strings/str_cat.h"

namespace weft::runtime {

absl::StatusOr<BatchSampler> BatchSampler::create(std::vector<uint32_t> tokens,
                                                  int64_t batch, int64_t seq,
                                                  int64_t vocab, uint64_t seed,
                                                  const std::string &label) {
  if (static_cast<int64_t>(tokens.size()) < seq + 1)
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": has ", tokens.size(), " tokens; a training window of ", seq,
        " tokens needs at least ", seq + 1));
  if (absl::Status s =
          checkTokenRange(tokens, static_cast<uint32_t>(vocab), label);
      !s.ok())
    return s;
  BatchSampler sampler;
  sampler.tokens_ = std::move(tokens);
  sampler.batch_ = batch;
  sampler.seq_ = seq;
  sampler.seed_ = seed;
  return sampler;
}

void BatchSampler::fill(int64_t step, int32_t *tokens, int32_t *labels) const {
  uint64_t windows = tokens_.size() - seq_; // Valid start offsets.
  uint64_t stream = seed_ ^ 0x64617461ull;  // "data": apart from init streams.
  for (int64_t r = 0; r < batch_; ++r) {
    uint64_t draw = splitmix64(
        stream + static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ull +
        static_cast<uint64_t>(r));
    uint64_t start = draw % windows;
    for (int64_t i = 0; i < seq_; ++i) {
      tokens[r * seq_ + i] = static_cast<int32_t>(tokens_[start + i]);
      labels[r * seq_ + i] = static_cast<int32_t>(tokens_[start + i + 1]);
    }
  }
}

} // namespace weft::runtime

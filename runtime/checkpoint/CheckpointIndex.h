//===- CheckpointIndex.h - a checkpoint's JSON files, read ------*- C++ -*-===//
//
// The two JSON files of a checkpoint (Checkpoint.h): index.json and each
// rank's rank-<r>.json, parsed as untrusted input (no executor involved, so
// a fuzzer reads them too: test/fuzz/checkpoint_fuzzer.cpp). Errors start
// with the file's path.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CHECKPOINT_CHECKPOINTINDEX_H
#define WEFT_RUNTIME_CHECKPOINT_CHECKPOINTINDEX_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace weft::runtime {

/// The version index.json states.
inline constexpr const char *kCheckpointFormat = "weft-checkpoint-1";

/// What else decides a run's next steps besides the tensors: by name (a
/// flag), its value. Resume refuses a run whose facts differ.
using RunFacts = std::map<std::string, std::string>;

/// index.json's fields.
struct CheckpointIndex {
  int64_t step = 0;
  std::string bundle; // The saving bundle's manifest hash.
  int64_t ranks = 0;
  RunFacts run;
};

/// index.json's text at `path`: an object with "format"
/// (kCheckpointFormat), "step" and "ranks" (non-negative and positive
/// integers), "bundle" (a string) and "run" (strings by name).
absl::StatusOr<CheckpointIndex> parseCheckpointIndex(std::string_view text,
                                                     const std::string &path);

/// Whether a job of `ranks` ranks running the bundle of `bundleHash` with
/// `facts` may resume from `index` (read from `path`): an error naming what
/// differs.
absl::Status checkCheckpointIndex(const CheckpointIndex &index,
                                  const std::string &path,
                                  const std::string &bundleHash, int64_t ranks,
                                  const RunFacts &facts);

/// rank-<r>.json's text at `path`: each tensor's XXH64 (16 hex digits), by
/// name.
absl::StatusOr<std::map<std::string, std::string>>
parseRankTable(std::string_view text, const std::string &path);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_CHECKPOINT_CHECKPOINTINDEX_H

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
#include <vector>

namespace weft::runtime {

/// The version index.json states. Version 2's rank tables say how a
/// consolidated checkpoint holds each tensor and which are optimizer state,
/// and hold a pipeline stage's tensors only on its ranks; version 1 (the
/// first, without them) cannot be resharded or exported, so it is refused.
inline constexpr const char *kCheckpointFormat = "weft-checkpoint-2";

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

/// Whether a run with `facts` may continue from `index` (read from
/// `path`): an error naming the first fact that differs.
absl::Status checkRunFacts(const CheckpointIndex &index,
                           const std::string &path, const RunFacts &facts);

/// The shape a consolidated (Hugging Face) checkpoint holds a tensor of
/// global shape `global` in: `held` if given (the same elements in another
/// shape), else its first `rows` rows (-1: all; the rest pads it). Two
/// plans' tensors of one name must agree on it.
std::vector<int64_t> consolidatedShape(std::vector<int64_t> global,
                                       int64_t rows,
                                       const std::vector<int64_t> &held = {});

/// What rank-<r>.json says of one tensor the rank wrote: its block of the
/// global tensor and how a consolidated checkpoint holds that tensor, so
/// another plan (or `weftc export`) can assemble it without the bundle.
struct BlockEntry {
  std::string xxh64; // 16 hex digits, of the block's bytes in the file.
  std::vector<int64_t> shape, globalShape, start;
  /// A consolidated checkpoint keeps this many rows of the global tensor's
  /// dimension 0 (-1: all; the rest pads it).
  int64_t rows = -1;
  /// Or holds the global tensor in this shape (empty: its own).
  std::vector<int64_t> checkpointShape;
  /// Or as slices along dimension 0 named by this pattern ("": one tensor).
  std::string stack;
  bool state = false; // Optimizer state rather than a model parameter.

  /// The elements a consolidated checkpoint keeps: the first `rows` rows'.
  int64_t keptElements() const;
};
using RankTable = std::map<std::string, BlockEntry>;

/// rank-<r>.json's text at `path`: each tensor's entry, by name, every
/// field checked (the block inside the global tensor, sizes that do not
/// overflow).
absl::StatusOr<RankTable> parseRankTable(std::string_view text,
                                         const std::string &path);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_CHECKPOINT_CHECKPOINTINDEX_H

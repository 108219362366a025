//===- Dataset.h - token shards and their shuffled sequences ----*- C++ -*-===//
//
// A dataset is a directory of token shards (nanoGPT's `.bin` layout: flat
// little-endian uint16 or uint32 ids) and an index, `dataset.json`:
//
//   {"format": "weft-dataset", "version": 1, "dtype": "uint16",
//    "vocab": 256, "eos": 10,
//    "shards": [{"file": "shard-00000.bin", "tokens": 1048576}, ...]}
//
// (`eos` optional; shard paths relative to the index). Training reads it
// as sequences: each shard is cut into windows of seq + 1 tokens, one
// after another with a stride of seq (a window's last token is the next
// one's first, so every token but a shard's first is a label exactly
// once). An epoch visits every window of every shard once, in an order
// drawn by KeyedPermutation from (seed, epoch): a shuffle without
// replacement in O(1) memory. The order is a function of the position
// alone, so a run's position in the data is the number of sequences it
// has consumed, and a resumed run continues the same order.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DATA_DATASET_H
#define WEFT_RUNTIME_DATA_DATASET_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

struct DatasetShard {
  std::string path; // Resolved against the index's directory.
  int64_t tokens = 0;
};

struct Dataset {
  std::string index; // The dataset.json it was read from.
  int bytesPerToken = 2;
  int64_t vocab = 0;
  int64_t eos = -1; // -1: not given.
  /// What made the ids ("bytes", "sentencepiece"; empty: not said): with
  /// "bytes", samples decode as text.
  std::string tokenizer;
  std::vector<DatasetShard> shards;

  /// Reads and checks `dataset.json` (or a directory holding one): the
  /// format, every field, and each shard's size on disk against its token
  /// count. Errors name the file, the shard and what is wrong.
  static absl::StatusOr<Dataset> open(const std::string &path);
  /// A dataset of one flat file of `bytesPerToken`-wide ids (1: text under
  /// the byte tokenizer) of vocabulary `vocab`, its ids already checked.
  static absl::StatusOr<Dataset> fromFile(const std::string &path,
                                          int bytesPerToken, int64_t vocab);
};

/// Writes a dataset: ids appended in order, cut into shards of at most
/// `shardTokens` ids (`shard-00000.bin`, ...), the index written by
/// finish() once every shard is complete (so a crashed prepare leaves no
/// index that names a partial shard).
class DatasetWriter {
public:
  /// Ids of `vocab` (<= 65536: uint16, else uint32) into directory `dir`
  /// (created); `eos` -1 for none.
  static absl::StatusOr<DatasetWriter> create(std::string dir, int64_t vocab,
                                              int64_t eos, int64_t shardTokens);
  /// Appends ids (each below the vocabulary: else an error naming it).
  absl::Status append(const std::vector<uint32_t> &ids);
  /// Records what made the ids (Dataset::tokenizer) in the index.
  void setTokenizer(std::string name) { tokenizer = std::move(name); }
  /// Closes the last shard and writes dataset.json.
  absl::StatusOr<Dataset> finish();

private:
  absl::Status flush();
  std::string dir;
  int64_t vocab = 0, eos = -1, shardTokens = 0;
  std::string tokenizer;
  int bytesPerToken = 2;
  std::vector<uint32_t> pending; // The open shard's ids.
  std::vector<DatasetShard> shards;
};

/// Where a window lies: `shard`'s tokens from `offset`, seq + 1 of them.
struct WindowRef {
  int64_t shard = 0, offset = 0;
};

/// How an epoch's order keeps reads large: windows are read a chunk at a
/// time (consecutive windows, about kChunkBytes of ids, one read per shard
/// it spans), and the order shuffles chunks, then windows within each
/// group of `group` chunks, so a group's chunks are all a stretch of
/// positions needs (a shuffle buffer of `group` chunks, as tf.data's and
/// WebDataset's). What it costs: a rank of R data-parallel ones uses 1/R
/// of each chunk it reads (its rows come from any chunk of the group), so
/// the job reads R times the data, from the page cache after the first
/// rank of a node; and the last group + 1 chunks stay in memory as 4-byte
/// ids (twice a uint16 file's bytes: about 18 MiB per source by default).
struct ChunkShape {
  static constexpr int64_t kChunkBytes = int64_t(1) << 20;
  int64_t windows = 0; // Windows per chunk; 0: about kChunkBytes of ids.
  int64_t group = 8;   // Chunks per shuffle group.
};

/// A dataset's windows of seq + 1 tokens in shuffled epochs.
class ShuffledWindows {
public:
  /// Fails when the dataset holds no window of seq + 1 tokens, or `vocab`
  /// (the model's) is below the dataset's.
  static absl::StatusOr<ShuffledWindows> create(Dataset dataset, int64_t seq,
                                                int64_t vocab, uint64_t seed,
                                                ChunkShape shape = {});

  /// Windows in one epoch.
  int64_t size() const { return total; }
  /// The window at position `position` of the run (from 0): epoch
  /// position / size(), shuffled by (seed, epoch). Positions [g G C,
  /// (g + 1) G C) of an epoch are the windows of G chunks of C (the
  /// shape's), in an order keyed by the group; the windows of the last,
  /// partial chunk come last, shuffled among themselves. A dataset of one
  /// partial chunk is one keyed permutation of its windows.
  WindowRef at(int64_t position) const;
  /// The window `index` (from 0, below size()) in file order: shards in
  /// the index's order, each cut into consecutive windows of seq tokens
  /// (and the next as the last label), as a held-out set is read.
  WindowRef inOrder(int64_t index) const;
  /// Reads `window` into `tokens` (its first seq) and `labels` (the next
  /// seq) from its chunk, which is read whole (a read per shard it spans)
  /// unless one of the last `group` + 1 chunks read. An id outside the
  /// index's vocabulary is an error naming the shard and the token's
  /// position in it.
  absl::Status read(WindowRef window, int32_t *tokens, int32_t *labels) const;
  /// Reads from the files so far (every copy of this object counts).
  int64_t fileReads() const;
  /// Windows per chunk.
  int64_t chunkWindows() const { return chunk; }
  /// `count` ids of `shard` from `offset` (fewer at its end).
  absl::StatusOr<std::vector<uint32_t>>
  readTokens(int64_t shard, int64_t offset, int64_t count) const;

  const Dataset &dataset() const { return data; }

private:
  /// The global window index (over every shard) of `ref`.
  int64_t windowIndex(WindowRef ref) const;
  Dataset data;
  int64_t seq = 0, vocab = 0, total = 0;
  int64_t chunk = 1, group = 1; // Windows per chunk, chunks per group.
  uint64_t seed = 0;
  /// Windows before each shard (prefix sums), and one past the last.
  std::vector<int64_t> firstWindow;
  /// The shards, open for reading, and the chunks read last (shared: the
  /// sampler is copied).
  struct Files;
  std::shared_ptr<Files> files;
};

/// A window of one of a mixture's sources.
struct MixedRef {
  int64_t source = 0;
  WindowRef window;
};

/// Several sources' windows mixed by weight, as the training data. Each
/// block of kBlock positions gives source d exactly its share n_d of the
/// block (weights rounded by largest remainder, summing to kBlock), at
/// slots a keyed permutation scatters over the block; so the mix is exact
/// within every block, and the k-th draw from source d (its own shuffled
/// epochs) is a function of the position alone, as resume needs. Over
/// whole blocks, each source's draws are exactly the first ones of its own
/// order; within a block they are reordered, so a source with fewer
/// windows than its share of a block meets some of them twice in it. One
/// source is read in its own order.
class DataMixture {
public:
  static constexpr int64_t kBlock = 1000;
  /// `weights` positive, one per source.
  static absl::StatusOr<DataMixture>
  create(std::vector<ShuffledWindows> sources, std::vector<double> weights,
         uint64_t seed);
  MixedRef at(int64_t position) const;
  absl::Status read(MixedRef ref, int32_t *tokens, int32_t *labels) const {
    return sources[ref.source].read(ref.window, tokens, labels);
  }
  const ShuffledWindows &source(size_t i) const { return sources[i]; }
  size_t size() const { return sources.size(); }
  /// Source d's windows per block of kBlock positions.
  int64_t share(size_t d) const { return shares[d]; }

private:
  std::vector<ShuffledWindows> sources;
  std::vector<int64_t> shares, starts; // Per source; starts: prefix sums.
  uint64_t seed = 0;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DATA_DATASET_H

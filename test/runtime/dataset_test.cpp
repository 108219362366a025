//===- dataset_test.cpp - shards, their index and the shuffle -------------===//

#include "runtime/data/Dataset.h"
#include "runtime/data/Permutation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

namespace fs = std::filesystem;
using namespace weft::runtime;

namespace {

TEST(KeyedPermutation, IsABijectionOfEverySize) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 16ull, 17ull, 1000ull, 4097ull}) {
    KeyedPermutation p(n, 42);
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = p(i);
      ASSERT_LT(v, n);
      EXPECT_FALSE(seen[v]) << "n=" << n << " visits " << v << " twice";
      seen[v] = true;
    }
  }
}

TEST(KeyedPermutation, KeysGiveDifferentOrders) {
  KeyedPermutation a(1000, 1), b(1000, 2);
  int same = 0, fixed = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
  }
  // A random pair of permutations agrees in about one place.
  EXPECT_LT(same, 20);
  EXPECT_LT(fixed, 20);
}

/// A dataset of shards holding ids 0, 1, 2, ... (mod vocab) in `dir`.
std::string writeDataset(const fs::path &dir, std::vector<int64_t> sizes,
                         int64_t vocab = 1000, const char *dtype = "uint16") {
  fs::create_directories(dir);
  std::string shards;
  int64_t next = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::string name = "shard-" + std::to_string(s) + ".bin";
    std::ofstream out(dir / name, std::ios::binary);
    for (int64_t i = 0; i < sizes[s]; ++i, ++next) {
      uint32_t id = static_cast<uint32_t>(next % vocab);
      out.write(reinterpret_cast<const char *>(&id),
                std::string(dtype) == "uint16" ? 2 : 4);
    }
    shards += (s ? ", " : "") + std::string("{\"file\": \"") + name +
              "\", \"tokens\": " + std::to_string(sizes[s]) + "}";
  }
  std::ofstream(dir / "dataset.json")
      << "{\"format\": \"weft-dataset\", \"version\": 1, \"dtype\": \"" << dtype
      << "\", \"vocab\": " << vocab << ", \"shards\": [" << shards << "]}";
  return (dir / "dataset.json").string();
}

fs::path scratch(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("weft-dataset-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

TEST(ShuffledWindows, EveryWindowOncePerEpochAcrossShards) {
  // Shards of 50, 0, 33 and 81 tokens at seq 8: 6 + 0 + 4 + 10 windows.
  std::string index = writeDataset(scratch("once"), {50, 0, 33, 81});
  absl::StatusOr<Dataset> data = Dataset::open(index);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*data, 8, 1000, 7);
  ASSERT_TRUE(windows.ok()) << windows.status();
  ASSERT_EQ(windows->size(), 20);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t i = 0; i < 20; ++i) {
      WindowRef w = windows->at(epoch * 20 + i);
      EXPECT_NE(w.shard, 1); // Too short for one window.
      EXPECT_TRUE(seen.insert({w.shard, w.offset}).second);
    }
    EXPECT_EQ(seen.size(), 20u);
  }
  // Epochs are shuffled differently, and so are seeds.
  absl::StatusOr<ShuffledWindows> other =
      ShuffledWindows::create(*data, 8, 1000, 8);
  ASSERT_TRUE(other.ok());
  int sameEpoch = 0, sameSeed = 0;
  for (int64_t i = 0; i < 20; ++i) {
    WindowRef a = windows->at(i), b = windows->at(20 + i), c = other->at(i);
    sameEpoch += a.shard == b.shard && a.offset == b.offset;
    sameSeed += a.shard == c.shard && a.offset == c.offset;
  }
  EXPECT_LT(sameEpoch, 20);
  EXPECT_LT(sameSeed, 20);
}

TEST(ShuffledWindows, ChunkedOrderReadsWholeChunksOnce) {
  // Shards of 50, 0, 33 and 81 tokens at seq 8: 6 + 0 + 4 + 10 = 20
  // windows; chunks of 3 windows (six full, the last of 2) in groups of 2:
  // positions 0-5, 6-11, 12-17 are two chunks each, 18-19 the last one.
  std::string index = writeDataset(scratch("chunks"), {50, 0, 33, 81});
  absl::StatusOr<Dataset> data = Dataset::open(index);
  ASSERT_TRUE(data.ok()) << data.status();
  ChunkShape shape;
  shape.windows = 3;
  shape.group = 2;
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*data, 8, 1000, 7, shape);
  ASSERT_TRUE(windows.ok()) << windows.status();
  ASSERT_EQ(windows->size(), 20);
  // Window w's global index: 6 in shard 0, 4 in shard 2, 10 in shard 3.
  auto global = [](WindowRef w) {
    static const int64_t first[] = {0, 6, 6, 10};
    return first[w.shard] + w.offset / 8;
  };
  std::vector<int32_t> tokens(8), labels(8);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<int64_t> seen;
    for (int64_t g = 0; g < 4; ++g) {
      std::set<int64_t> chunks;
      for (int64_t i = g * 6; i < std::min<int64_t>(20, (g + 1) * 6); ++i) {
        WindowRef w = windows->at(epoch * 20 + i);
        EXPECT_TRUE(seen.insert(global(w)).second);
        chunks.insert(global(w) / 3);
        // Its tokens are the shard's, whichever chunk read them: ids count
        // up across shards (shard 2 starts at id 50, shard 3 at 83).
        ASSERT_TRUE(windows->read(w, tokens.data(), labels.data()).ok());
        static const int64_t base[] = {0, 50, 50, 83};
        EXPECT_EQ(tokens[0], base[w.shard] + w.offset);
        EXPECT_EQ(labels[7], base[w.shard] + w.offset + 8);
      }
      EXPECT_EQ(chunks.size(), g < 3 ? 2u : 1u) << "group " << g;
    }
    EXPECT_EQ(seen.size(), 20u);
    // One read per chunk and shard it spans (seven chunks; chunk 3,
    // windows 9-11, spans shards 2 and 3): 8 reads for the first epoch's
    // 20 windows, every chunk read once (the cache holds a group and one
    // more); later epochs may find their first chunks still there.
    if (epoch == 0)
      EXPECT_EQ(windows->fileReads(), 8);
  }
  EXPECT_LE(windows->fileReads(), 3 * 8);
}

TEST(ShuffledWindows, ReadsTokensAndNextTokenLabels) {
  std::string index = writeDataset(scratch("read"), {40, 40}, 1000, "uint32");
  absl::StatusOr<Dataset> data = Dataset::open(index);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*data, 8, 1000, 0);
  ASSERT_TRUE(windows.ok());
  std::vector<int32_t> tokens(8), labels(8);
  // Shard 1 starts at id 40; its window at offset 16 holds 56..64.
  ASSERT_TRUE(windows->read({1, 16}, tokens.data(), labels.data()).ok());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(tokens[i], 56 + i);
    EXPECT_EQ(labels[i], 57 + i);
  }
}

TEST(ShuffledWindows, InFileOrderWindowsFollowOneAnother) {
  // Shards of 50, 0 and 33 tokens at seq 8: 6 + 0 + 4 windows; ids run on
  // from shard to shard, so window i of shard s starts at s's first id
  // plus 8 i, whatever the epoch order.
  std::string index = writeDataset(scratch("order"), {50, 0, 33});
  absl::StatusOr<Dataset> data = Dataset::open(index);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*data, 8, 1000, 3);
  ASSERT_TRUE(windows.ok()) << windows.status();
  ASSERT_EQ(windows->size(), 10);
  std::vector<int32_t> tokens(8), labels(8);
  for (int64_t i = 0; i < 10; ++i) {
    WindowRef w = windows->inOrder(i);
    EXPECT_EQ(w.shard, i < 6 ? 0 : 2) << i;
    EXPECT_EQ(w.offset, 8 * (i < 6 ? i : i - 6)) << i;
    ASSERT_TRUE(windows->read(w, tokens.data(), labels.data()).ok());
    EXPECT_EQ(tokens[0], i < 6 ? 8 * i : 50 + 8 * (i - 6)) << i;
    EXPECT_EQ(labels[7], tokens[0] + 8) << i;
  }
}

TEST(DatasetWriter, WritesShardsAnIndexOpens) {
  fs::path dir = scratch("writer");
  absl::StatusOr<DatasetWriter> w =
      DatasetWriter::create(dir.string(), 70000, 69999, 4);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<uint32_t> ids = {1, 2, 69999, 65536, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(w->append(ids).ok());
  EXPECT_FALSE(w->append({70000}).ok()); // Outside the vocabulary.
  absl::StatusOr<Dataset> d = w->finish();
  ASSERT_TRUE(d.ok()) << d.status();
  // A vocabulary past 65536 is stored as uint32, in shards of 4, 4 and 2.
  EXPECT_EQ(d->bytesPerToken, 4);
  EXPECT_EQ(d->eos, 69999);
  ASSERT_EQ(d->shards.size(), 3u);
  EXPECT_EQ(d->shards[2].tokens, 2);
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*d, 3, 70000, 0);
  ASSERT_TRUE(windows.ok()) << windows.status();
  absl::StatusOr<std::vector<uint32_t>> back = windows->readTokens(0, 0, 4);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, std::vector<uint32_t>(ids.begin(), ids.begin() + 4));
  // A second dataset into the same directory is refused.
  EXPECT_FALSE(DatasetWriter::create(dir.string(), 256, -1, 4).ok());
}

TEST(DataMixture, MixesByWeightAndDrawsEachSourceInItsOrder) {
  // Sources of 12 and 30 windows at seq 8, weighted 3:1.
  std::string a = writeDataset(scratch("mix-a"), {97});
  std::string b = writeDataset(scratch("mix-b"), {241});
  std::vector<ShuffledWindows> sources;
  for (const std::string &index : {a, b}) {
    absl::StatusOr<Dataset> d = Dataset::open(index);
    ASSERT_TRUE(d.ok());
    absl::StatusOr<ShuffledWindows> w = ShuffledWindows::create(*d, 8, 1000, 5);
    ASSERT_TRUE(w.ok());
    sources.push_back(std::move(*w));
  }
  absl::StatusOr<DataMixture> mix =
      DataMixture::create(std::move(sources), {3, 1}, 5);
  ASSERT_TRUE(mix.ok()) << mix.status();
  EXPECT_EQ(mix->share(0), 750);
  EXPECT_EQ(mix->share(1), 250);
  // Exactly 3:1 in every block of 1000 positions, and over whole blocks
  // each source's draws are exactly the first ones of its own shuffled
  // epochs (as a multiset: a block reorders them).
  int64_t counts[2] = {0, 0};
  std::multiset<std::pair<int64_t, int64_t>> drawn, expected;
  for (int64_t p = 0; p < 4000; ++p) {
    MixedRef ref = mix->at(p);
    ASSERT_TRUE(ref.source == 0 || ref.source == 1);
    drawn.insert({ref.source, ref.window.offset});
    ++counts[ref.source];
    if ((p + 1) % 1000 == 0) {
      EXPECT_EQ(counts[0], 750 * (p + 1) / 1000);
      EXPECT_EQ(counts[1], 250 * (p + 1) / 1000);
    }
  }
  for (int64_t k = 0; k < 3000; ++k)
    expected.insert({0, mix->source(0).at(k).offset});
  for (int64_t k = 0; k < 1000; ++k)
    expected.insert({1, mix->source(1).at(k).offset});
  EXPECT_TRUE(drawn == expected);
  // Weights must be positive.
  std::vector<ShuffledWindows> none;
  EXPECT_FALSE(DataMixture::create(std::move(none), {}, 0).ok());
}

/// The error of opening `index` (or creating its windows), as text.
std::string errorOf(const std::string &index, int64_t modelVocab = 1000) {
  absl::StatusOr<Dataset> data = Dataset::open(index);
  if (!data.ok())
    return std::string(data.status().message());
  absl::StatusOr<ShuffledWindows> w =
      ShuffledWindows::create(*data, 8, modelVocab, 0);
  if (!w.ok())
    return std::string(w.status().message());
  std::vector<int32_t> t(8), l(8);
  for (int64_t i = 0; i < w->size(); ++i)
    if (absl::Status s = w->read(w->at(i), t.data(), l.data()); !s.ok())
      return std::string(s.message());
  return "";
}

TEST(Dataset, BadShardsAreNamed) {
  fs::path dir = scratch("bad");
  std::string index = writeDataset(dir, {50, 50});
  EXPECT_EQ(errorOf(index), "");
  // Truncated to an odd byte count.
  fs::resize_file(dir / "shard-1.bin", 99);
  EXPECT_EQ(errorOf(index),
            index + ": shard 1 (shard-1.bin): holds 99 bytes, but the index "
                    "says 50 uint16 tokens (100 bytes): not a whole number "
                    "of 2-byte ids");
  // Missing.
  fs::remove(dir / "shard-1.bin");
  EXPECT_NE(errorOf(index).find("shard 1 (shard-1.bin): cannot open"),
            std::string::npos);
  // Ids at or above the model's vocabulary.
  std::string big = writeDataset(scratch("vocab"), {50}, 1000);
  EXPECT_EQ(errorOf(big, 30),
            big + ": the dataset's vocabulary (1000 ids) is larger than the "
                  "model's (30)");
  // Ids the index's vocabulary does not hold.
  fs::path few = scratch("few");
  std::string fewIndex = writeDataset(few, {50});
  std::ofstream(few / "dataset.json")
      << "{\"format\": \"weft-dataset\", \"version\": 1, \"dtype\": "
         "\"uint16\", \"vocab\": 20, \"shards\": [{\"file\": "
         "\"shard-0.bin\", \"tokens\": 50}]}";
  std::string error = errorOf(fewIndex);
  EXPECT_NE(error.find((few / "shard-0.bin").string() + ": token "),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find(", outside the vocabulary [0, 20) " + fewIndex + " declares"),
      std::string::npos)
      << error;
  // An index that disagrees: a field missing, a wrong format.
  std::ofstream(dir / "other.json") << "{\"format\": \"weft-dataset\", "
                                       "\"version\": 1, \"dtype\": \"uint8\"}";
  EXPECT_EQ(errorOf((dir / "other.json").string()),
            (dir / "other.json").string() +
                ": field 'dtype' must be \"uint16\" or \"uint32\"");
  std::ofstream(dir / "model.json") << "{\"n_embd\": 64}";
  EXPECT_NE(
      errorOf((dir / "model.json").string()).find("unknown field 'n_embd'"),
      std::string::npos);
  // No window long enough.
  std::string tiny = writeDataset(scratch("tiny"), {8, 5});
  EXPECT_EQ(errorOf(tiny), tiny + ": no shard holds a window of 9 tokens "
                                  "(seq 8 and its labels)");
}

} // namespace

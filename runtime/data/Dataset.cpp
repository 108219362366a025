//===- Dataset.cpp - token shards and their shuffled sequences ------------===//

#include "runtime/data/Dataset.h"

#include "runtime/data/Permutation.h"
#include "runtime/support/Files.h"
#include "runtime/support/Json.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <list>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace weft::runtime {
namespace {
absl::Status bad(const std::string &where, const std::string &what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

/// A JSON integer field of `object` within [lo, hi].
absl::StatusOr<int64_t> integer(const nlohmann::json &object, const char *key,
                                int64_t lo, int64_t hi,
                                const std::string &where) {
  auto it = object.find(key);
  if (it == object.end())
    return bad(where, absl::StrCat("field '", key, "' is missing"));
  if (!it->is_number_integer())
    return bad(where, absl::StrCat("field '", key, "' must be an integer"));
  // Unsigned JSON numbers past int64 read as negative through get<int64_t>.
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(hi))
    return bad(where, absl::StrCat("field '", key, "' must be at most ", hi));
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    return bad(where, absl::StrCat("field '", key, "' is ", v, ", not between ",
                                   lo, " and ", hi));
  return v;
}

absl::Status onlyKeys(const nlohmann::json &object,
                      std::initializer_list<const char *> keys,
                      const std::string &where) {
  for (const auto &[key, value] : object.items())
    if (std::none_of(keys.begin(), keys.end(),
                     [&](const char *k) { return key == k; }))
      return bad(where, absl::StrCat("unknown field '", key, "'"));
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<Dataset> Dataset::open(const std::string &path) {
  Dataset d;
  std::error_code error;
  d.index = fs::is_directory(path, error)
                ? (fs::path(path) / "dataset.json").string()
                : path;
  absl::StatusOr<std::string> text = readFileAtMost(d.index, 64 << 20);
  if (!text.ok())
    return text.status();
  absl::StatusOr<nlohmann::json> json = parseUntrustedJson(*text);
  if (!json.ok())
    return bad(d.index, std::string(json.status().message()));
  if (!json->is_object())
    return bad(d.index, "is not a JSON object (a weft dataset index)");
  if (absl::Status s = onlyKeys(
          *json,
          {"format", "version", "dtype", "vocab", "eos", "tokenizer", "shards"},
          d.index);
      !s.ok())
    return s;
  auto format = json->find("format");
  if (format == json->end() || *format != "weft-dataset")
    return bad(d.index, "is not a weft dataset index (field 'format' must be "
                        "\"weft-dataset\"; weft-data prepare writes one)");
  absl::StatusOr<int64_t> version = integer(*json, "version", 1, 1, d.index);
  if (!version.ok())
    return version.status();
  auto dtype = json->find("dtype");
  if (dtype == json->end() || !dtype->is_string() ||
      (*dtype != "uint16" && *dtype != "uint32"))
    return bad(d.index, "field 'dtype' must be \"uint16\" or \"uint32\"");
  d.bytesPerToken = *dtype == "uint16" ? 2 : 4;
  absl::StatusOr<int64_t> vocab =
      integer(*json, "vocab", 1, int64_t(1) << (8 * d.bytesPerToken), d.index);
  if (!vocab.ok())
    return vocab.status();
  d.vocab = *vocab;
  if (json->contains("eos")) {
    absl::StatusOr<int64_t> eos =
        integer(*json, "eos", 0, d.vocab - 1, d.index);
    if (!eos.ok())
      return eos.status();
    d.eos = *eos;
  }
  if (auto t = json->find("tokenizer"); t != json->end()) {
    if (!t->is_string() || t->get<std::string>().size() > 256)
      return bad(d.index, "field 'tokenizer' must be a name (a string of at "
                          "most 256 characters)");
    d.tokenizer = t->get<std::string>();
  }
  auto shards = json->find("shards");
  if (shards == json->end() || !shards->is_array() || shards->empty())
    return bad(d.index, "field 'shards' must be a non-empty list");
  if (shards->size() > (1u << 20))
    return bad(d.index, "lists more than 1048576 shards");
  fs::path dir = fs::path(d.index).parent_path();
  for (size_t i = 0; i < shards->size(); ++i) {
    const nlohmann::json &entry = (*shards)[i];
    std::string where = absl::StrCat(d.index, ": shard ", i);
    if (!entry.is_object())
      return bad(where, "is not {\"file\": ..., \"tokens\": N}");
    if (absl::Status s = onlyKeys(entry, {"file", "tokens"}, where); !s.ok())
      return s;
    auto file = entry.find("file");
    if (file == entry.end() || !file->is_string() ||
        file->get<std::string>().empty())
      return bad(where, "field 'file' must be a file name");
    absl::StatusOr<int64_t> tokens =
        integer(entry, "tokens", 0, int64_t(1) << 50, where);
    if (!tokens.ok())
      return tokens.status();
    std::string name = file->get<std::string>();
    DatasetShard shard{(dir / name).string(), *tokens};
    where = absl::StrCat(d.index, ": shard ", i, " (", name, ")");
    struct stat st;
    if (::stat(shard.path.c_str(), &st) != 0)
      return bad(where, absl::StrCat("cannot open ", shard.path, ": ",
                                     std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
      return bad(where, shard.path + " is not a regular file");
    int64_t want = shard.tokens * d.bytesPerToken;
    if (st.st_size != want)
      return bad(where, absl::StrCat(
                            "holds ", st.st_size, " bytes, but the index says ",
                            shard.tokens, " ", dtype->get<std::string>(),
                            " tokens (", want, " bytes)",
                            st.st_size % d.bytesPerToken
                                ? absl::StrCat(": not a whole number of ",
                                               d.bytesPerToken, "-byte ids")
                                : ""));
    d.shards.push_back(std::move(shard));
  }
  return d;
}

absl::StatusOr<Dataset> Dataset::fromFile(const std::string &path,
                                          int bytesPerToken, int64_t vocab) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return bad(path, "is not a readable file");
  Dataset d;
  d.index = path;
  d.bytesPerToken = bytesPerToken;
  d.vocab = vocab;
  d.shards.push_back({path, st.st_size / bytesPerToken});
  return d;
}

absl::StatusOr<DatasetWriter> DatasetWriter::create(std::string dir,
                                                    int64_t vocab, int64_t eos,
                                                    int64_t shardTokens) {
  if (vocab < 1 || vocab > (int64_t(1) << 32))
    return absl::InvalidArgumentError(
        absl::StrCat("a vocabulary of ", vocab, " ids cannot be stored"));
  if (shardTokens < 1)
    return absl::InvalidArgumentError("shards need at least one token each");
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir))
    return bad(dir, "cannot create the dataset directory: " + error.message());
  if (fs::exists(fs::path(dir) / "dataset.json"))
    return bad(dir, "already holds a dataset.json; write a new dataset into "
                    "an empty directory");
  DatasetWriter w;
  w.dir = std::move(dir);
  w.vocab = vocab;
  w.eos = eos;
  w.shardTokens = shardTokens;
  w.bytesPerToken = vocab <= 65536 ? 2 : 4;
  return w;
}

absl::Status DatasetWriter::append(const std::vector<uint32_t> &ids) {
  for (uint32_t id : ids) {
    if (id >= vocab)
      return absl::InvalidArgumentError(absl::StrCat(
          "id ", id, " is outside the vocabulary [0, ", vocab, ")"));
    pending.push_back(id);
    if (static_cast<int64_t>(pending.size()) == shardTokens)
      if (absl::Status s = flush(); !s.ok())
        return s;
  }
  return absl::OkStatus();
}

absl::Status DatasetWriter::flush() {
  if (pending.empty())
    return absl::OkStatus();
  char name[32];
  std::snprintf(name, sizeof(name), "shard-%05zu.bin", shards.size());
  std::string path = (fs::path(dir) / name).string();
  std::vector<uint8_t> bytes(pending.size() * bytesPerToken);
  for (size_t i = 0; i < pending.size(); ++i)
    for (int b = 0; b < bytesPerToken; ++b) // Little-endian.
      bytes[i * bytesPerToken + b] = (pending[i] >> (8 * b)) & 0xFF;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
      std::fclose(f) != 0)
    return bad(path, absl::StrCat("cannot write: ", std::strerror(errno)));
  shards.push_back({name, static_cast<int64_t>(pending.size())});
  pending.clear();
  return absl::OkStatus();
}

absl::StatusOr<Dataset> DatasetWriter::finish() {
  if (absl::Status s = flush(); !s.ok())
    return s;
  if (shards.empty())
    return bad(dir, "no tokens to write");
  nlohmann::json index = {{"format", "weft-dataset"},
                          {"version", 1},
                          {"dtype", bytesPerToken == 2 ? "uint16" : "uint32"},
                          {"vocab", vocab}};
  if (eos >= 0)
    index["eos"] = eos;
  if (!tokenizer.empty())
    index["tokenizer"] = tokenizer;
  nlohmann::json list = nlohmann::json::array();
  for (const DatasetShard &s : shards)
    list.push_back({{"file", s.path}, {"tokens", s.tokens}});
  index["shards"] = std::move(list);
  std::string path = (fs::path(dir) / "dataset.json").string();
  FILE *f = std::fopen(path.c_str(), "wb");
  std::string text = index.dump(1) + "\n";
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() ||
      std::fclose(f) != 0)
    return bad(path, absl::StrCat("cannot write: ", std::strerror(errno)));
  return Dataset::open(path);
}

struct ShuffledWindows::Files {
  std::vector<int> fds;
  /// A chunk's ids: per shard it spans, its first window and the ids
  /// from that window's first token to the last one's label.
  struct Span {
    int64_t firstWindow = 0;
    std::vector<uint32_t> ids;
  };
  struct Chunk {
    int64_t index = -1;
    std::vector<Span> spans;
  };
  std::mutex mutex;
  std::list<Chunk> recent; // Most recently read first.
  std::atomic<int64_t> reads{0};
  ~Files() {
    for (int fd : fds)
      ::close(fd);
  }
};

absl::StatusOr<ShuffledWindows>
ShuffledWindows::create(Dataset dataset, int64_t seq, int64_t vocab,
                        uint64_t seed, ChunkShape shape) {
  ShuffledWindows w;
  if (seq < 1)
    return absl::InvalidArgumentError("a window needs seq >= 1");
  if (shape.windows < 0 || shape.group < 1)
    return absl::InvalidArgumentError(
        "a chunk needs windows >= 0 and a group at least one chunk");
  w.chunk = shape.windows > 0
                ? shape.windows
                : std::max<int64_t>(1, ChunkShape::kChunkBytes /
                                           (seq * dataset.bytesPerToken));
  w.group = shape.group;
  if (dataset.vocab > vocab)
    return bad(dataset.index,
               absl::StrCat("the dataset's vocabulary (", dataset.vocab,
                            " ids) is larger than the model's (", vocab, ")"));
  w.seq = seq;
  w.vocab = vocab;
  w.seed = seed;
  w.files = std::make_shared<Files>();
  w.firstWindow.push_back(0);
  for (const DatasetShard &shard : dataset.shards) {
    int64_t windows = shard.tokens > seq ? (shard.tokens - 1) / seq : 0;
    w.firstWindow.push_back(w.firstWindow.back() + windows);
    int fd = ::open(shard.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return bad(shard.path,
                 absl::StrCat("cannot open: ", std::strerror(errno)));
    w.files->fds.push_back(fd);
  }
  w.total = w.firstWindow.back();
  if (w.total == 0 && dataset.shards.size() == 1 &&
      dataset.shards[0].path == dataset.index)
    return bad(dataset.index,
               absl::StrCat("has ", dataset.shards[0].tokens,
                            " tokens; a training window of ", seq,
                            " tokens needs at least ", seq + 1));
  if (w.total == 0)
    return bad(dataset.index,
               absl::StrCat("no shard holds a window of ", seq + 1,
                            " tokens (seq ", seq, " and its labels)"));
  w.data = std::move(dataset);
  return w;
}

WindowRef ShuffledWindows::at(int64_t position) const {
  uint64_t epoch = static_cast<uint64_t>(position / total);
  uint64_t key =
      seed * 0x9E3779B97F4A7C15ull ^ (epoch + 1) * 0xD1B54A32D192ED03ull;
  int64_t p = position % total, full = total / chunk, head = full * chunk;
  int64_t window;
  if (p >= head) {
    // The last, partial chunk (the whole epoch when no chunk is full).
    KeyedPermutation tail(static_cast<uint64_t>(total - head), key);
    window = head + static_cast<int64_t>(tail(static_cast<uint64_t>(p - head)));
  } else {
    int64_t g = p / (group * chunk), first = g * group;
    int64_t chunks = std::min(group, full - first);
    KeyedPermutation within(static_cast<uint64_t>(chunks * chunk),
                            key ^ (static_cast<uint64_t>(g) + 1) *
                                      0x94D049BB133111EBull);
    int64_t v = static_cast<int64_t>(
        within(static_cast<uint64_t>(p - g * group * chunk)));
    KeyedPermutation order(static_cast<uint64_t>(full),
                           key ^ 0xBF58476D1CE4E5B9ull);
    int64_t c =
        static_cast<int64_t>(order(static_cast<uint64_t>(first + v / chunk)));
    window = c * chunk + v % chunk;
  }
  return inOrder(window);
}

WindowRef ShuffledWindows::inOrder(int64_t index) const {
  int64_t shard =
      std::upper_bound(firstWindow.begin(), firstWindow.end(), index) -
      firstWindow.begin() - 1;
  return {shard, (index - firstWindow[shard]) * seq};
}

absl::StatusOr<std::vector<uint32_t>>
ShuffledWindows::readTokens(int64_t shard, int64_t offset,
                            int64_t count) const {
  int width = data.bytesPerToken;
  count =
      std::max<int64_t>(0, std::min(count, data.shards[shard].tokens - offset));
  std::vector<uint8_t> bytes(count * width);
  const std::string &path = data.shards[shard].path;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::pread(files->fds[shard], bytes.data() + done, bytes.size() - done,
                static_cast<off_t>(offset * width + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return bad(path, absl::StrCat("cannot read tokens ", offset, " to ",
                                    offset + count, ": ",
                                    n < 0 ? std::strerror(errno)
                                          : "the file is shorter than its "
                                            "index says"));
    done += static_cast<size_t>(n);
  }
  std::vector<uint32_t> ids(count);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t id = 0;
    for (int b = width - 1; b >= 0; --b) // Little-endian.
      id = (id << 8) | bytes[i * width + b];
    // The index's vocabulary, which create() checked the model's covers.
    if (id >= static_cast<uint64_t>(data.vocab))
      return bad(path, absl::StrCat("token ", offset + i, " is id ", id,
                                    ", outside the vocabulary [0, ", data.vocab,
                                    ") ", data.index, " declares"));
    ids[i] = id;
  }
  return ids;
}

int64_t ShuffledWindows::windowIndex(WindowRef ref) const {
  return firstWindow[ref.shard] + ref.offset / seq;
}

int64_t ShuffledWindows::fileReads() const { return files->reads.load(); }

absl::Status ShuffledWindows::read(WindowRef window, int32_t *tokens,
                                   int32_t *labels) const {
  if (window.shard < 0 ||
      window.shard >= static_cast<int64_t>(data.shards.size()) ||
      window.offset < 0 || window.offset % seq != 0 ||
      windowIndex(window) >= firstWindow[window.shard + 1])
    return absl::InvalidArgumentError(
        absl::StrCat("no window at token ", window.offset, " of shard ",
                     window.shard, " of ", data.index));
  int64_t w = windowIndex(window), c = w / chunk;
  std::lock_guard<std::mutex> lock(files->mutex);
  auto found =
      std::find_if(files->recent.begin(), files->recent.end(),
                   [&](const Files::Chunk &k) { return k.index == c; });
  if (found == files->recent.end()) {
    // Read the chunk whole: its windows [c C, (c + 1) C), one read per
    // shard they lie in, each from a window's first token to the last
    // window's label.
    Files::Chunk loaded;
    loaded.index = c;
    int64_t end = std::min(total, (c + 1) * chunk);
    for (int64_t first = c * chunk; first < end;) {
      int64_t shard =
          std::upper_bound(firstWindow.begin(), firstWindow.end(), first) -
          firstWindow.begin() - 1;
      int64_t last = std::min(end, firstWindow[shard + 1]);
      files->reads.fetch_add(1);
      absl::StatusOr<std::vector<uint32_t>> ids = readTokens(
          shard, (first - firstWindow[shard]) * seq, (last - first) * seq + 1);
      if (!ids.ok())
        return ids.status();
      if (static_cast<int64_t>(ids->size()) != (last - first) * seq + 1)
        return bad(data.shards[shard].path,
                   absl::StrCat("has no window of ", seq + 1, " tokens at ",
                                (last - 1 - firstWindow[shard]) * seq));
      loaded.spans.push_back({first, std::move(*ids)});
      first = last;
    }
    files->recent.push_front(std::move(loaded));
    if (static_cast<int64_t>(files->recent.size()) > group + 1)
      files->recent.pop_back();
    found = files->recent.begin();
  } else {
    files->recent.splice(files->recent.begin(), files->recent, found);
    found = files->recent.begin();
  }
  for (const Files::Span &span : found->spans) {
    int64_t at = (w - span.firstWindow) * seq;
    if (at < 0 || at + seq + 1 > static_cast<int64_t>(span.ids.size()))
      continue;
    for (int64_t i = 0; i < seq; ++i) {
      tokens[i] = static_cast<int32_t>(span.ids[at + i]);
      labels[i] = static_cast<int32_t>(span.ids[at + i + 1]);
    }
    return absl::OkStatus();
  }
  return absl::InternalError("a window is missing from its chunk");
}

absl::StatusOr<DataMixture>
DataMixture::create(std::vector<ShuffledWindows> sources,
                    std::vector<double> weights, uint64_t seed) {
  if (sources.empty() || sources.size() != weights.size())
    return absl::InvalidArgumentError("a mixture needs one weight per source");
  if (static_cast<int64_t>(sources.size()) > kBlock)
    return absl::InvalidArgumentError(
        absl::StrCat("a mixture takes at most ", kBlock, " datasets"));
  double total = 0;
  for (double w : weights) {
    if (!(w > 0) || !std::isfinite(w))
      return absl::InvalidArgumentError(absl::StrCat(
          "a dataset's weight must be a positive number, got ", w));
    total += w;
  }
  DataMixture m;
  m.seed = seed;
  // Largest remainder: floor shares, then one more to the largest
  // fractions until they sum to kBlock. Every source gets at least one.
  std::vector<std::pair<double, size_t>> rest;
  int64_t given = 0;
  for (size_t d = 0; d < weights.size(); ++d) {
    double exact = kBlock * weights[d] / total;
    int64_t n = std::max<int64_t>(1, static_cast<int64_t>(exact));
    m.shares.push_back(n);
    given += n;
    rest.push_back({exact - static_cast<double>(n), d});
  }
  std::sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; given < kBlock; i = (i + 1) % rest.size(), ++given)
    ++m.shares[rest[i].second];
  // Tiny weights forced up to one slot may overshoot: the largest give way.
  for (; given > kBlock; --given)
    --*std::max_element(m.shares.begin(), m.shares.end());
  m.starts.push_back(0);
  for (int64_t n : m.shares)
    m.starts.push_back(m.starts.back() + n);
  m.sources = std::move(sources);
  return m;
}

MixedRef DataMixture::at(int64_t position) const {
  if (sources.size() == 1)
    return {0, sources[0].at(position)};
  int64_t block = position / kBlock;
  KeyedPermutation slots(kBlock, seed * 0xA0761D6478BD642Full ^
                                     (block + 1) * 0xE7037ED1A0B428DBull);
  int64_t slot = static_cast<int64_t>(slots(position % kBlock));
  int64_t d =
      std::upper_bound(starts.begin(), starts.end(), slot) - starts.begin() - 1;
  int64_t k = block * shares[d] + (slot - starts[d]);
  return {d, sources[d].at(k)};
}

} // namespace weft::runtime

//===- CheckpointIndex.cpp - a checkpoint's JSON files, read --------------===//

#include "runtime/checkpoint/CheckpointIndex.h"

#include "runtime/support/Json.h"

#include "absl/strings/str_cat.h"

#include <algorithm>

namespace weft::runtime {
namespace {
absl::Status invalid(const std::string &path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}
} // namespace

absl::StatusOr<CheckpointIndex> parseCheckpointIndex(std::string_view text,
                                                     const std::string &path) {
  absl::StatusOr<nlohmann::json> json = parseUntrustedJson(text);
  if (!json.ok())
    return invalid(path, json.status().message());
  if (!json->is_object())
    return invalid(path, "not a JSON object");
  auto format = json->find("format");
  if (format != json->end() && *format == "weft-checkpoint-1")
    return invalid(path, absl::StrCat("written by an older Weft "
                                      "(weft-checkpoint-1), whose rank tables "
                                      "lack what resuming now needs; resume "
                                      "it with the Weft that wrote it"));
  if (format == json->end() || *format != kCheckpointFormat)
    return invalid(path, absl::StrCat("not a Weft checkpoint index (field "
                                      "'format' is not '",
                                      kCheckpointFormat, "')"));
  CheckpointIndex index;
  auto integer = [&](const char *key, int64_t least, int64_t most,
                     int64_t &out) -> absl::Status {
    auto it = json->find(key);
    if (it == json->end() || !it->is_number_integer() ||
        it->get<int64_t>() < least || it->get<int64_t>() > most)
      return invalid(path,
                     absl::StrCat("field '", key, "' must be an integer in [",
                                  least, ", ", most, "]"));
    out = it->get<int64_t>();
    return absl::OkStatus();
  };
  // A rank count no job has (2^20 ranks) is a damaged index, not a
  // reason to allocate a table per rank.
  if (absl::Status s = integer("step", 0, int64_t(1) << 62, index.step);
      !s.ok())
    return s;
  if (absl::Status s = integer("ranks", 1, int64_t(1) << 20, index.ranks);
      !s.ok())
    return s;
  auto bundle = json->find("bundle");
  if (bundle == json->end() || !bundle->is_string())
    return invalid(path, "field 'bundle' must be a string");
  index.bundle = bundle->get<std::string>();
  auto run = json->find("run");
  if (run == json->end() || !run->is_object())
    return invalid(path, "field 'run' must be an object");
  for (auto &[name, value] : run->items()) {
    if (!value.is_string())
      return invalid(
          path, absl::StrCat("field 'run': '", name, "' must be a string"));
    index.run[name] = value.get<std::string>();
  }
  return index;
}

absl::Status checkRunFacts(const CheckpointIndex &index,
                           const std::string &path, const RunFacts &facts) {
  for (const auto &[name, value] : facts) {
    auto saved = index.run.find(name);
    std::string was = saved == index.run.end() ? "(none)" : saved->second;
    if (was != value)
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": saved by a run with ", name, " ", was,
                       "; this one has ", value, ": resume with the same"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> consolidatedShape(std::vector<int64_t> global,
                                       int64_t rows,
                                       const std::vector<int64_t> &held) {
  if (!held.empty())
    return held;
  if (rows >= 0 && !global.empty())
    global[0] = rows;
  return global;
}

int64_t BlockEntry::keptElements() const {
  int64_t n = 1;
  for (int64_t d : consolidatedShape(globalShape, rows))
    n *= d;
  return n;
}

namespace {
/// Sizes a tensor may have: at most 8 dimensions of at most 2^40 elements
/// in all (no product overflows).
constexpr size_t kMaxRank = 8;
constexpr int64_t kMaxElements = int64_t(1) << 40;

absl::StatusOr<std::vector<int64_t>> sizes(const nlohmann::json &entry,
                                           const char *key, int64_t least,
                                           const std::string &at) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_array() || it->size() > kMaxRank)
    return absl::InvalidArgumentError(absl::StrCat(
        at, "'", key, "' must be a list of at most ", kMaxRank, " integers"));
  std::vector<int64_t> out;
  int64_t product = 1;
  for (const nlohmann::json &n : *it) {
    if (!n.is_number_integer() || n.get<int64_t>() < least ||
        n.get<int64_t>() > kMaxElements ||
        (least > 0 && n.get<int64_t>() > kMaxElements / product))
      return absl::InvalidArgumentError(absl::StrCat(
          at, "'", key, "' holds ", n.dump(), "; sizes are integers in [",
          least, ", 2^40] whose product is at most 2^40"));
    if (least > 0)
      product *= n.get<int64_t>();
    out.push_back(n.get<int64_t>());
  }
  return out;
}

absl::StatusOr<BlockEntry> parseEntry(const nlohmann::json &entry,
                                      const std::string &at) {
  if (!entry.is_object())
    return absl::InvalidArgumentError(at + "must be an object");
  BlockEntry e;
  auto hash = entry.find("xxh64");
  if (hash == entry.end() || !hash->is_string() ||
      hash->get<std::string>().size() != 16 ||
      hash->get<std::string>().find_first_not_of("0123456789abcdef") !=
          std::string::npos)
    return absl::InvalidArgumentError(
        at + "has no 'xxh64' of 16 lowercase hex digits");
  e.xxh64 = hash->get<std::string>();
  absl::StatusOr<std::vector<int64_t>> shape = sizes(entry, "shape", 1, at),
                                       global =
                                           sizes(entry, "global_shape", 1, at),
                                       start = sizes(entry, "start", 0, at);
  for (const auto *s : {&shape, &global, &start})
    if (!s->ok())
      return s->status();
  e.shape = std::move(*shape);
  e.globalShape = std::move(*global);
  e.start = std::move(*start);
  if (e.shape.size() != e.globalShape.size() ||
      e.start.size() != e.globalShape.size())
    return absl::InvalidArgumentError(
        at + "'shape', 'global_shape' and 'start' differ in length");
  for (size_t d = 0; d < e.shape.size(); ++d)
    if (e.start[d] + e.shape[d] > e.globalShape[d])
      return absl::InvalidArgumentError(
          absl::StrCat(at, "the block (start ", e.start[d], ", ", e.shape[d],
                       " long) runs past the global tensor's ",
                       e.globalShape[d], " in dimension ", d));
  if (auto rows = entry.find("rows"); rows != entry.end()) {
    if (e.globalShape.empty() || !rows->is_number_integer() ||
        rows->get<int64_t>() < 1 || rows->get<int64_t>() > e.globalShape[0])
      return absl::InvalidArgumentError(
          at + "'rows' must be an integer in [1, global_shape[0]]");
    e.rows = rows->get<int64_t>();
  }
  if (entry.contains("checkpoint_shape")) {
    absl::StatusOr<std::vector<int64_t>> held =
        sizes(entry, "checkpoint_shape", 1, at);
    if (!held.ok())
      return held.status();
    int64_t n = 1;
    for (int64_t d : *held)
      n *= d;
    if (n != e.keptElements())
      return absl::InvalidArgumentError(
          at + "'checkpoint_shape' holds another number of elements than "
               "the global tensor");
    e.checkpointShape = std::move(*held);
  }
  if (auto stack = entry.find("stack"); stack != entry.end()) {
    if (stack->is_string())
      e.stack = stack->get<std::string>();
    if (!stack->is_string() ||
        std::count(e.stack.begin(), e.stack.end(), '*') != 1 ||
        e.globalShape.size() < 2)
      return absl::InvalidArgumentError(
          at + "'stack' must be a pattern with one '*' of a tensor of rank "
               "2 or more");
  }
  if (auto state = entry.find("state"); state != entry.end()) {
    if (!state->is_boolean())
      return absl::InvalidArgumentError(at + "'state' must be true or false");
    e.state = state->get<bool>();
  }
  return e;
}
} // namespace

absl::StatusOr<RankTable> parseRankTable(std::string_view text,
                                         const std::string &path) {
  absl::StatusOr<nlohmann::json> json = parseUntrustedJson(text);
  if (!json.ok())
    return invalid(path, json.status().message());
  if (!json->is_object())
    return invalid(path, "not a JSON object");
  RankTable table;
  for (auto &[name, entry] : json->items()) {
    absl::StatusOr<BlockEntry> e =
        parseEntry(entry, absl::StrCat(path, ": tensor '", name, "': "));
    if (!e.ok())
      return e.status();
    table[name] = std::move(*e);
  }
  return table;
}

} // namespace weft::runtime

//===- CheckpointIndex.cpp - a checkpoint's JSON files, read --------------===//

#include "runtime/checkpoint/CheckpointIndex.h"

#include "runtime/support/Json.h"

#include "absl/strings/str_cat.h"

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
  if (format == json->end() || *format != kCheckpointFormat)
    return invalid(path, absl::StrCat("not a Weft checkpoint index (field "
                                      "'format' is not '",
                                      kCheckpointFormat, "')"));
  CheckpointIndex index;
  auto integer = [&](const char *key, int64_t least,
                     int64_t &out) -> absl::Status {
    auto it = json->find(key);
    if (it == json->end() || !it->is_number_integer() ||
        it->get<int64_t>() < least)
      return invalid(path,
                     absl::StrCat("field '", key,
                                  "' must be an integer of at least ", least));
    out = it->get<int64_t>();
    return absl::OkStatus();
  };
  if (absl::Status s = integer("step", 0, index.step); !s.ok())
    return s;
  if (absl::Status s = integer("ranks", 1, index.ranks); !s.ok())
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

absl::Status checkCheckpointIndex(const CheckpointIndex &index,
                                  const std::string &path,
                                  const std::string &bundleHash, int64_t ranks,
                                  const RunFacts &facts) {
  if (index.bundle != bundleHash)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": saved with another bundle (manifest hash ", index.bundle,
        ", this one's ", bundleHash,
        "); resume with the bundle and plan it was saved under (resharding "
        "onto another plan is not supported yet)"));
  if (index.ranks != ranks)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": saved by ", index.ranks, " ranks; this job has ", ranks));
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

absl::StatusOr<std::map<std::string, std::string>>
parseRankTable(std::string_view text, const std::string &path) {
  absl::StatusOr<nlohmann::json> json = parseUntrustedJson(text);
  if (!json.ok())
    return invalid(path, json.status().message());
  if (!json->is_object())
    return invalid(path, "not a JSON object");
  std::map<std::string, std::string> hashes;
  for (auto &[name, entry] : json->items()) {
    auto hash = entry.is_object() ? entry.find("xxh64") : entry.end();
    if (!entry.is_object() || hash == entry.end() || !hash->is_string() ||
        hash->get<std::string>().size() != 16)
      return invalid(path, absl::StrCat("tensor '", name,
                                        "' has no 'xxh64' of 16 hex digits"));
    hashes[name] = hash->get<std::string>();
  }
  return hashes;
}

} // namespace weft::runtime

//===- ReplicaCheck.cpp - silent-data-corruption checks -------------------===//

#include "runtime/train/ReplicaCheck.h"

#include "runtime/exec/BundleData.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace weft::runtime {

absl::Status checkReplicas(SchedExecutor &ex, Communicator *comm, int64_t step,
                           bool replayed) {
  MeshSpec mesh = meshSpecOf(ex.bundle());
  const std::vector<std::string> dp = {"dp"};
  if (!comm || mesh.axisIndex("dp") < 0 || mesh.groupSize(dp) < 2)
    return absl::OkStatus();
  // The tensors every dp replica holds whole: split over no dp axis.
  std::vector<const sched::Param *> replicated;
  for (const sched::Param &p : ex.bundle().params) {
    std::vector<std::string> axes =
        MeshSpec::axesOf(p.split ? *p.split : Sharding());
    if (std::find(axes.begin(), axes.end(), "dp") == axes.end())
      replicated.push_back(&p);
  }
  // Two 32-bit words of each tensor's XXH64, gathered in dp order.
  std::vector<int32_t> mine;
  for (const sched::Param *p : replicated) {
    absl::StatusOr<std::vector<float>> block = ex.param(p->name);
    if (!block.ok())
      return block.status();
    uint64_t h = XXH64(block->data(), block->size() * sizeof(float), 0);
    mine.push_back(static_cast<int32_t>(h & 0xFFFFFFFFu));
    mine.push_back(static_cast<int32_t>(h >> 32));
  }
  int64_t g = mesh.groupSize(dp);
  std::vector<int32_t> all(mine.size() * g);
  if (absl::Status s =
          comm->allGather(dp, mine.data(), all.data(), mine.size());
      !s.ok())
    return s;
  std::vector<int64_t> members = mesh.groupMembers(comm->rank(), dp);
  for (size_t t = 0; t < replicated.size(); ++t) {
    // The hash most replicas hold, and who holds another.
    std::map<uint64_t, std::vector<int64_t>> holders;
    for (int64_t j = 0; j < g; ++j) {
      const int32_t *w = &all[j * mine.size() + 2 * t];
      uint64_t h = static_cast<uint32_t>(w[0]) |
                   (static_cast<uint64_t>(static_cast<uint32_t>(w[1])) << 32);
      holders[h].push_back(members[j]);
    }
    if (holders.size() == 1)
      continue;
    auto majority = std::max_element(holders.begin(), holders.end(),
                                     [](const auto &a, const auto &b) {
                                       return a.second.size() < b.second.size();
                                     });
    std::vector<int64_t> odd;
    for (const auto &[h, ranks] : holders)
      if (h != majority->first || 2 * ranks.size() <= static_cast<size_t>(g))
        odd.insert(odd.end(), ranks.begin(), ranks.end());
    std::sort(odd.begin(), odd.end());
    return absl::DataLossError(absl::StrCat(
        "step ", step, ": silent data corruption: '", replicated[t]->name,
        "' differs between data-parallel replicas that must hold the same "
        "bits; ",
        2 * majority->second.size() > static_cast<size_t>(g)
            ? absl::StrCat("rank", odd.size() > 1 ? "s " : " ",
                           absl::StrJoin(odd, ", "), " disagree",
                           odd.size() > 1 ? "" : "s", " with the others")
            : absl::StrCat("ranks ", absl::StrJoin(odd, ", "),
                           " disagree and no majority tells which is right"),
        replayed ? "; the step's replay computed the same bits, so the fault "
                   "is persistent (a bad memory cell or unit on that rank): "
                   "take it out of the job (weft-run --elastic) and resume "
                   "from the last checkpoint"
                 : " (the hardware, or a nondeterministic kernel; "
                   "--sdc-check every=N,replay tells a transient fault from "
                   "a persistent one); resume from the last checkpoint"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SdcCheck> parseSdcCheck(const std::string &text) {
  SdcCheck check;
  if (text.empty())
    return check;
  std::string every = text;
  if (absl::EndsWith(text, ",replay")) {
    check.replay = true;
    every = text.substr(0, text.size() - 7);
  }
  if (every.rfind("every=", 0) != 0 ||
      !absl::SimpleAtoi(every.substr(6), &check.every) || check.every < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "--sdc-check '", text,
        "' is not every=N[,replay] with N a positive number of steps"));
  return check;
}

} // namespace weft::runtime

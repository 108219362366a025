//===- Replay.cpp - running a step again to tell a transient fault --------===//

#include "runtime/train/Replay.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace weft::runtime {

absl::Status StateCopy::take(const SchedExecutor &ex) {
  tensors.clear();
  for (const sched::Param &p : ex.bundle().params) {
    absl::StatusOr<std::vector<float>> values = ex.param(p.name);
    if (!values.ok())
      return values.status();
    tensors.push_back(std::move(*values));
  }
  return absl::OkStatus();
}

absl::Status StateCopy::restore(SchedExecutor &ex) const {
  for (size_t k = 0; k < tensors.size(); ++k)
    if (absl::Status s = ex.setParam(ex.bundle().params[k].name, tensors[k]);
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> hashState(const SchedExecutor &ex) {
  std::vector<uint64_t> hashes;
  for (const sched::Param &p : ex.bundle().params) {
    absl::StatusOr<std::vector<float>> values = ex.param(p.name);
    if (!values.ok())
      return values.status();
    hashes.push_back(XXH64(values->data(), values->size() * sizeof(float), 0));
  }
  return hashes;
}

namespace {
/// The ranks for which `mine` holds on some rank (every rank calls it).
absl::StatusOr<std::vector<int64_t>> ranksWhere(Communicator *comm, bool mine) {
  float flag = mine ? 1.0f : 0.0f;
  std::vector<float> all(comm ? comm->worldSize() : 1, flag);
  if (comm)
    if (absl::Status s = comm->allGather({}, &flag, all.data(), 1); !s.ok())
      return s;
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != 0)
      ranks.push_back(static_cast<int64_t>(r));
  return ranks;
}

/// The first tensor whose hashes differ ("" when none does).
std::string firstDifference(const SchedExecutor &ex,
                            const std::vector<uint64_t> &a,
                            const std::vector<uint64_t> &b) {
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k])
      return ex.bundle().params[k].name;
  return "";
}

std::string rankList(const std::vector<int64_t> &ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(ranks, ", "));
}
} // namespace

absl::StatusOr<StepReport>
replayedStep(TrainLoop &loop, SchedExecutor &ex, Communicator *comm,
             const std::function<absl::Status()> &afterFirstRun, const Log &log,
             bool leader) {
  int64_t done = loop.stepsDone();
  StateCopy before, firstState;
  if (absl::Status s = before.take(ex); !s.ok())
    return s;
  // One run of the step and the hashes of what it left: the first from
  // where the loop stands, the others from the state it started from.
  struct Run {
    StepReport report;
    std::vector<uint64_t> hashes;
  };
  auto run = [&](bool again) -> absl::StatusOr<Run> {
    if (again) {
      if (absl::Status s = before.restore(ex); !s.ok())
        return s;
      loop.resumeAt(done);
    }
    absl::StatusOr<StepReport> report = loop.step();
    if (!report.ok())
      return report.status();
    if (!again && afterFirstRun)
      if (absl::Status s = afterFirstRun(); !s.ok())
        return s;
    absl::StatusOr<std::vector<uint64_t>> hashes = hashState(ex);
    if (!hashes.ok())
      return hashes.status();
    return Run{std::move(*report), std::move(*hashes)};
  };
  absl::StatusOr<Run> first = run(false);
  if (!first.ok())
    return first.status();
  if (absl::Status s = firstState.take(ex); !s.ok())
    return s;
  absl::StatusOr<Run> second = run(true);
  if (!second.ok())
    return second.status();
  std::string differs = firstDifference(ex, first->hashes, second->hashes);
  absl::StatusOr<std::vector<int64_t>> faulty =
      ranksWhere(comm, !differs.empty());
  if (!faulty.ok())
    return faulty.status();
  if (faulty->empty())
    return second->report;
  int64_t step = done + 1;
  if (!differs.empty())
    log.say(absl::StrCat("step ", step, ": rank ", comm ? comm->rank() : 0,
                         "'s replay gave other bits of '", differs,
                         "' than the step's first run"));
  // A third run decides which of the two was right.
  absl::StatusOr<Run> third = run(true);
  if (!third.ok())
    return third.status();
  const std::vector<uint64_t> &h1 = first->hashes, &h2 = second->hashes,
                              &h3 = third->hashes;
  bool keepsSecond = h3 == h2, keepsFirst = !keepsSecond && h3 == h1;
  absl::StatusOr<std::vector<int64_t>> lost =
      ranksWhere(comm, !keepsSecond && !keepsFirst);
  if (!lost.ok())
    return lost.status();
  if (!lost->empty())
    return absl::DataLossError(absl::StrCat(
        "step ", step, ": ", rankList(*lost),
        " computed the step three times with three different results (",
        rankList(*faulty),
        " differed first): a device that cannot repeat a computation (a "
        "persistent fault, or a nondeterministic kernel); take it out of the "
        "job (weft-run --elastic) and resume from the last checkpoint"));
  if (keepsFirst)
    if (absl::Status s = firstState.restore(ex); !s.ok())
      return s;
  if (leader)
    log.say(absl::StrCat(
        "step ", step, ": transient fault on ", rankList(*faulty),
        ": a replay of the step gave other bits; two of three runs agree, and "
        "the job goes on with them (--sdc-check replay)"));
  return keepsFirst ? first->report : third->report;
}

} // namespace weft::runtime

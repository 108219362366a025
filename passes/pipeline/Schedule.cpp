//===- Schedule.cpp - pipeline schedule tables and their checks -----------===//

#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

using namespace weft::pipeline;

namespace {
llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "F";
  case Phase::Backward:
    return "B";
  case Phase::WeightGrad:
    return "W";
  }
  return "?";
}

/// GPipe: every forward, then every backward.
ScheduleTable gpipe(int64_t ranks, int64_t m) {
  ScheduleTable t{ScheduleKind::GPipe, ranks, m, 1, false, {}};
  t.actions.resize(ranks);
  for (auto &list : t.actions) {
    for (int64_t i = 0; i < m; ++i)
      list.push_back({Phase::Forward, i, 0});
    for (int64_t i = 0; i < m; ++i)
      list.push_back({Phase::Backward, i, 0});
  }
  return t;
}

/// 1F1B (PipeDream-flush): rank r runs p - r - 1 forwards ahead, then
/// alternates a forward and the oldest backward, then drains.
ScheduleTable oneFOneB(int64_t ranks, int64_t m) {
  ScheduleTable t{ScheduleKind::OneFOneB, ranks, m, 1, false, {}};
  t.actions.resize(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    auto &list = t.actions[r];
    int64_t warmup = std::min(ranks - r - 1, m);
    for (int64_t i = 0; i < warmup; ++i)
      list.push_back({Phase::Forward, i, 0});
    for (int64_t i = 0; i < m - warmup; ++i) {
      list.push_back({Phase::Forward, warmup + i, 0});
      list.push_back({Phase::Backward, i, 0});
    }
    for (int64_t i = m - warmup; i < m; ++i)
      list.push_back({Phase::Backward, i, 0});
  }
  return t;
}

/// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM's order): rank r's
/// k-th forward is micro-batch (k / pv) p + k % p on chunk (k / p) % v, its
/// backwards the same micro-batches on the chunks in reverse; warm-up is
/// 2 (p - r - 1) + (v - 1) p forwards.
ScheduleTable interleaved(int64_t ranks, int64_t m, int64_t v) {
  ScheduleTable t{ScheduleKind::Interleaved, ranks, m, v, false, {}};
  t.actions.resize(ranks);
  int64_t total = m * v;
  auto entry = [&](Phase phase, int64_t k) {
    int64_t group = (k / ranks) % v;
    int64_t chunk = phase == Phase::Forward ? group : v - 1 - group;
    return Action{phase, (k / (ranks * v)) * ranks + k % ranks, chunk};
  };
  for (int64_t r = 0; r < ranks; ++r) {
    auto &list = t.actions[r];
    int64_t warmup = std::min(2 * (ranks - r - 1) + (v - 1) * ranks, total);
    for (int64_t k = 0; k < warmup; ++k)
      list.push_back(entry(Phase::Forward, k));
    for (int64_t k = 0; k < total - warmup; ++k) {
      list.push_back(entry(Phase::Forward, warmup + k));
      list.push_back(entry(Phase::Backward, k));
    }
    for (int64_t k = total - warmup; k < total; ++k)
      list.push_back(entry(Phase::Backward, k));
  }
  return t;
}

/// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"): 1F1B with
/// the backward split into B and W, the weight gradients moved into the
/// slots 1F1B leaves idle. Built by running the ranks in lock step with
/// unit F, B and W, each free rank taking, in this order: a W once p - 1
/// are deferred; the next B whose input gradient has arrived; the next F
/// while fewer than p - r micro-batches wait for their B (1F1B's
/// activations in flight); any deferred W. With F = B = W this reaches the
/// paper's bubble, (p - 1) / (3 m), at most p - 1 weight gradients held.
ScheduleTable zeroBubbleH1(int64_t ranks, int64_t m) {
  ScheduleTable t{ScheduleKind::ZeroBubbleH1, ranks, m, 1, true, {}};
  t.actions.resize(ranks);
  // Per rank: next F, next B and next W micro-batch; when each rank's F
  // and B outputs became available (the tick after they ran).
  std::vector<int64_t> nextF(ranks, 0), nextB(ranks, 0), nextW(ranks, 0);
  std::vector<std::vector<int64_t>> fDone(ranks, std::vector<int64_t>(m, -1)),
      bDone(ranks, std::vector<int64_t>(m, -1));
  // Every tick some rank can move on (the last rank always can), so 3 m p
  // ticks suffice; the bound only guards against a mistake here, which
  // checkSchedule would then report as an incomplete table.
  for (int64_t tick = 0; tick < 3 * m * ranks + 3 &&
                         llvm::any_of(nextW, [&](int64_t w) { return w < m; });
       ++tick) {
    for (int64_t r = 0; r < ranks; ++r) {
      auto ready = [&](const std::vector<int64_t> &done, int64_t i) {
        return done[i] >= 0 && done[i] <= tick;
      };
      bool canW = nextW[r] < nextB[r];
      bool mustW = canW && nextB[r] - nextW[r] > ranks - 1;
      bool canB = nextB[r] < nextF[r] &&
                  (r == ranks - 1 ? ready(fDone[r], nextB[r])
                                  : ready(bDone[r + 1], nextB[r]));
      bool canF = nextF[r] < m && nextF[r] - nextB[r] < ranks - r &&
                  (r == 0 || ready(fDone[r - 1], nextF[r]));
      if (mustW || (!canB && !canF && canW)) {
        t.actions[r].push_back({Phase::WeightGrad, nextW[r]++, 0});
      } else if (canB) {
        bDone[r][nextB[r]] = tick + 1;
        t.actions[r].push_back({Phase::Backward, nextB[r]++, 0});
      } else if (canF) {
        fDone[r][nextF[r]] = tick + 1;
        t.actions[r].push_back({Phase::Forward, nextF[r]++, 0});
      }
    }
  }
  return t;
}

/// A message between stages, as the table implies it.
struct Message {
  bool gradient; // Else an activation.
  int64_t microbatch, fromStage, toStage;
  bool operator<(const Message &o) const {
    return std::tie(gradient, microbatch, fromStage, toStage) <
           std::tie(o.gradient, o.microbatch, o.fromStage, o.toStage);
  }
  bool operator==(const Message &o) const {
    return !(*this < o) && !(o < *this);
  }
};

std::string describe(const Message &msg) {
  return llvm::formatv("the {0} of micro-batch {1} (stage {2} to {3})",
                       msg.gradient ? "input gradient" : "activation",
                       msg.microbatch, msg.fromStage, msg.toStage);
}

/// One rank's entries as sends, receives and computations, in order.
struct Step {
  enum Kind { Receive, Compute, Send } kind;
  size_t entry; // Index into the rank's table.
  Message message{};
  int64_t peer = -1; // The other rank of a send or receive.
};

std::vector<std::vector<Step>> stepsOf(const ScheduleTable &t) {
  std::vector<std::vector<Step>> steps(t.ranks);
  int64_t last = t.stages() - 1;
  auto rankOf = [&](int64_t stage) { return stage % t.ranks; };
  for (int64_t r = 0; r < t.ranks; ++r)
    for (size_t e = 0; e < t.actions[r].size(); ++e) {
      const Action &a = t.actions[r][e];
      int64_t s = t.stageOf(r, a.chunk);
      std::optional<Message> in, out;
      if (a.phase == Phase::Forward) {
        if (s > 0)
          in = Message{false, a.microbatch, s - 1, s};
        if (s < last)
          out = Message{false, a.microbatch, s, s + 1};
      } else if (a.phase == Phase::Backward) {
        if (s < last)
          in = Message{true, a.microbatch, s + 1, s};
        if (s > 0)
          out = Message{true, a.microbatch, s, s - 1};
      }
      if (in)
        steps[r].push_back({Step::Receive, e, *in, rankOf(in->fromStage)});
      steps[r].push_back({Step::Compute, e, {}, -1});
      if (out)
        steps[r].push_back({Step::Send, e, *out, rankOf(out->toStage)});
    }
  return steps;
}

/// Every stage of the rank computes F, B (and W) of every micro-batch once,
/// B after F and W after B.
llvm::Error checkEntries(const ScheduleTable &t) {
  for (int64_t r = 0; r < t.ranks; ++r) {
    std::map<std::tuple<int64_t, int64_t, Phase>, size_t> seen;
    for (size_t e = 0; e < t.actions[r].size(); ++e) {
      const Action &a = t.actions[r][e];
      std::string what = actionName(a, t.chunks > 1);
      if (a.microbatch < 0 || a.microbatch >= t.microbatches || a.chunk < 0 ||
          a.chunk >= t.chunks)
        return fail(llvm::formatv("rank {0}, entry {1} ({2}): no such "
                                  "micro-batch or chunk ({3} micro-batches, "
                                  "{4} chunks)",
                                  r, e, what, t.microbatches, t.chunks));
      if (a.phase == Phase::WeightGrad && !t.splitBackward)
        return fail(llvm::formatv("rank {0}, entry {1} ({2}): a W entry in "
                                  "a schedule whose backward is not split",
                                  r, e, what));
      if (!seen.try_emplace({a.chunk, a.microbatch, a.phase}, e).second)
        return fail(llvm::formatv("rank {0} runs {1} twice (entries {2} and "
                                  "{3})",
                                  r, what,
                                  seen[{a.chunk, a.microbatch, a.phase}], e));
      auto needs = [&](Phase before) -> llvm::Error {
        if (seen.count({a.chunk, a.microbatch, before}))
          return llvm::Error::success();
        Action first{before, a.microbatch, a.chunk};
        return fail(llvm::formatv("rank {0} runs {1} (entry {2}) before {3}", r,
                                  what, e, actionName(first, t.chunks > 1)));
      };
      if (a.phase == Phase::Backward)
        if (llvm::Error err = needs(Phase::Forward))
          return err;
      if (a.phase == Phase::WeightGrad)
        if (llvm::Error err = needs(Phase::Backward))
          return err;
    }
    for (int64_t c = 0; c < t.chunks; ++c)
      for (int64_t i = 0; i < t.microbatches; ++i)
        for (Phase p : {Phase::Forward, Phase::Backward, Phase::WeightGrad}) {
          if (p == Phase::WeightGrad && !t.splitBackward)
            continue;
          if (!seen.count({c, i, p}))
            return fail(llvm::formatv("rank {0} never runs {1}", r,
                                      actionName({p, i, c}, t.chunks > 1)));
        }
  }
  return llvm::Error::success();
}
} // namespace

llvm::StringRef weft::pipeline::scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  return "";
}

llvm::Expected<ScheduleKind>
weft::pipeline::parseScheduleKind(llvm::StringRef name) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
        ScheduleKind::ZeroBubbleH1})
    if (scheduleName(kind) == name)
      return kind;
  return fail("unknown schedule '" + name +
              "' (known: gpipe, 1f1b, interleaved, zb-h1)");
}

std::string weft::pipeline::actionName(const Action &a, bool withChunk) {
  std::string name = phaseName(a.phase) + std::to_string(a.microbatch);
  if (withChunk)
    name += "." + std::to_string(a.chunk);
  return name;
}

llvm::Expected<ScheduleTable>
weft::pipeline::buildSchedule(ScheduleKind kind, int64_t ranks,
                              int64_t microbatches, int64_t chunks) {
  // Bounds that keep every table small enough to build and check.
  if (ranks < 1 || ranks > 4096)
    return fail(llvm::formatv("{0} pipeline ranks: give 1 to 4096", ranks));
  if (microbatches < 1 || microbatches > 65536)
    return fail(
        llvm::formatv("{0} micro-batches: give 1 to 65536", microbatches));
  std::string name = scheduleName(kind).str();
  if (kind != ScheduleKind::Interleaved && chunks != 1)
    return fail(name + " has one stage per rank: virtual stages need "
                       "schedule=interleaved");
  if (kind == ScheduleKind::Interleaved && (chunks < 2 || chunks > 64))
    return fail(llvm::formatv("interleaved needs 2 to 64 virtual stages per "
                              "rank, got {0}",
                              chunks));
  // 1F1B-style schedules keep up to p micro-batches in flight; with fewer
  // the pipeline never fills (torchtitan#775 is this mistake at run time).
  if (kind != ScheduleKind::GPipe && microbatches < ranks)
    return fail(llvm::formatv("{0} needs at least as many micro-batches as "
                              "pipeline ranks: {1} micro-batches for {2} "
                              "ranks",
                              name, microbatches, ranks));
  if (kind == ScheduleKind::Interleaved && microbatches % ranks != 0)
    return fail(llvm::formatv("interleaved needs the micro-batches to be a "
                              "multiple of the pipeline ranks: {0} for {1} "
                              "ranks",
                              microbatches, ranks));
  switch (kind) {
  case ScheduleKind::GPipe:
    return gpipe(ranks, microbatches);
  case ScheduleKind::OneFOneB:
    return oneFOneB(ranks, microbatches);
  case ScheduleKind::Interleaved:
    return interleaved(ranks, microbatches, chunks);
  case ScheduleKind::ZeroBubbleH1:
    return zeroBubbleH1(ranks, microbatches);
  }
  return fail("unknown schedule");
}

llvm::Error weft::pipeline::checkSchedule(const ScheduleTable &t) {
  if (static_cast<int64_t>(t.actions.size()) != t.ranks)
    return fail(llvm::formatv("the table has {0} rank lists for {1} ranks",
                              t.actions.size(), t.ranks));
  if (llvm::Error err = checkEntries(t))
    return err;
  std::vector<std::vector<Step>> steps = stepsOf(t);
  bool chunked = t.chunks > 1;
  auto entryName = [&](int64_t r, const Step &s) {
    return actionName(t.actions[r][s.entry], chunked);
  };
  // Peers post their messages in the same order.
  std::map<std::pair<int64_t, int64_t>, std::vector<const Step *>> sends,
      receives;
  for (int64_t r = 0; r < t.ranks; ++r)
    for (const Step &s : steps[r])
      if (s.peer != r && s.kind == Step::Send)
        sends[{r, s.peer}].push_back(&s);
      else if (s.peer != r && s.kind == Step::Receive)
        receives[{s.peer, r}].push_back(&s);
  for (auto &[pair, sent] : sends) {
    auto [from, to] = pair;
    const std::vector<const Step *> &got = receives[pair];
    for (size_t k = 0; k < std::max(sent.size(), got.size()); ++k) {
      if (k < sent.size() && k < got.size() &&
          sent[k]->message == got[k]->message)
        continue;
      if (k >= got.size() || k >= sent.size())
        return fail(llvm::formatv("ranks {0} and {1} do not pair their "
                                  "messages: {0} sends {2} and {1} receives "
                                  "{3}",
                                  from, to, sent.size(), got.size()));
      return fail(llvm::formatv(
          "ranks {0} and {1} do not meet in the same order: message {2} "
          "from rank {0} to rank {1} is {3}, sent after {4}, but rank {1} "
          "receives {5} there, for {6}",
          from, to, k, describe(sent[k]->message), entryName(from, *sent[k]),
          describe(got[k]->message), entryName(to, *got[k])));
    }
  }
  // Run the ranks: a receive waits for its send, sends never wait. With
  // orders matched, a rank that cannot go on waits for one peer; if no rank
  // can, the waits form a cycle, which the error follows.
  std::set<Message> sent;
  std::vector<size_t> at(t.ranks, 0);
  for (;;) {
    bool moved = false;
    for (int64_t r = 0; r < t.ranks; ++r)
      while (at[r] < steps[r].size()) {
        const Step &s = steps[r][at[r]];
        if (s.kind == Step::Receive && !sent.count(s.message))
          break;
        if (s.kind == Step::Send)
          sent.insert(s.message);
        ++at[r];
        moved = true;
      }
    if (!moved)
      break;
  }
  int64_t stuck = -1;
  for (int64_t r = 0; r < t.ranks && stuck < 0; ++r)
    if (at[r] < steps[r].size())
      stuck = r;
  if (stuck < 0)
    return llvm::Error::success();
  // Follow the waits from `stuck` until a rank repeats.
  std::vector<int64_t> chain = {stuck};
  std::set<int64_t> onChain = {stuck};
  for (;;) {
    int64_t next = steps[chain.back()][at[chain.back()]].peer;
    if (onChain.count(next) || at[next] >= steps[next].size()) {
      chain.push_back(next);
      break;
    }
    chain.push_back(next);
    onChain.insert(next);
  }
  int64_t a = chain[chain.size() - 2], b = chain.back();
  const Step &waitA = steps[a][at[a]];
  std::string bState = at[b] >= steps[b].size()
                           ? llvm::formatv("rank {0} has finished", b).str()
                           : llvm::formatv("rank {0} waits at {1} for {2}", b,
                                           entryName(b, steps[b][at[b]]),
                                           describe(steps[b][at[b]].message))
                                 .str();
  return fail(llvm::formatv("the schedule deadlocks: rank {0} waits at {1} "
                            "for {2} from rank {3}, and {4}",
                            a, entryName(a, waitA), describe(waitA.message), b,
                            bState));
}

llvm::Expected<Timeline>
weft::pipeline::simulateSchedule(const ScheduleTable &t,
                                 const StageCosts &costs) {
  if (llvm::Error err = checkSchedule(t))
    return std::move(err);
  std::vector<std::vector<Step>> steps = stepsOf(t);
  double scale = 1.0 / t.chunks;
  auto duration = [&](Phase p) {
    switch (p) {
    case Phase::Forward:
      return costs.forward * scale;
    case Phase::Backward:
      return (t.splitBackward ? costs.backward
                              : costs.backward + costs.weightGrad) *
             scale;
    case Phase::WeightGrad:
      return costs.weightGrad * scale;
    }
    return 0.0;
  };
  Timeline line;
  line.spans.resize(t.ranks);
  line.peakInFlight.assign(t.ranks, 0);
  line.peakAwaitingW.assign(t.ranks, 0);
  for (int64_t r = 0; r < t.ranks; ++r)
    line.spans[r].resize(t.actions[r].size());
  std::map<Message, double> arrival;
  std::map<Message, std::pair<int64_t, int64_t>> sender; // Rank, entry.
  std::vector<size_t> at(t.ranks, 0);
  std::vector<double> clock(t.ranks, 0.0);
  std::vector<int64_t> inFlight(t.ranks, 0), awaitingW(t.ranks, 0);
  // checkSchedule proved this finishes: each pass moves some rank on.
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < t.ranks; ++r)
      while (at[r] < steps[r].size()) {
        const Step &s = steps[r][at[r]];
        if (s.kind == Step::Receive) {
          auto it = arrival.find(s.message);
          if (it == arrival.end())
            break;
          clock[r] = std::max(clock[r], it->second);
          auto [fromRank, fromEntry] = sender[s.message];
          if (fromRank != r)
            line.transfers.push_back({fromRank, fromEntry, r,
                                      static_cast<int64_t>(s.entry),
                                      s.message.gradient});
        } else if (s.kind == Step::Send) {
          arrival[s.message] = clock[r];
          sender[s.message] = {r, static_cast<int64_t>(s.entry)};
        } else {
          const Action &a = t.actions[r][s.entry];
          double start = clock[r];
          clock[r] += duration(a.phase);
          line.spans[r][s.entry] = {start, clock[r]};
          if (a.phase == Phase::Forward) {
            line.peakInFlight[r] =
                std::max(line.peakInFlight[r], ++inFlight[r]);
          } else if (a.phase == Phase::Backward) {
            --inFlight[r];
            if (t.splitBackward)
              line.peakAwaitingW[r] =
                  std::max(line.peakAwaitingW[r], ++awaitingW[r]);
          } else {
            --awaitingW[r];
          }
        }
        ++at[r];
        moved = true;
      }
  }
  double busy = 0;
  for (int64_t r = 0; r < t.ranks; ++r) {
    line.makespan = std::max(line.makespan, clock[r]);
    for (auto [start, end] : line.spans[r])
      busy += end - start;
  }
  line.bubbleFraction = busy > 0 ? (line.makespan * t.ranks - busy) / busy : 0;
  return line;
}

double weft::pipeline::formulaBubbleFraction(ScheduleKind kind, int64_t ranks,
                                             int64_t microbatches,
                                             int64_t chunks) {
  double p = static_cast<double>(ranks), m = static_cast<double>(microbatches);
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / m;
  case ScheduleKind::Interleaved:
    return (p - 1) / (static_cast<double>(chunks) * m);
  case ScheduleKind::ZeroBubbleH1:
    return (p - 1) / (3 * m);
  }
  return 0;
}

//===- schedule_test.cpp - pipeline schedule tables -----------------------===//

#include "passes/pipeline/Schedule.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace weft::pipeline;

namespace {
ScheduleTable build(ScheduleKind kind, int64_t p, int64_t m, int64_t v = 1) {
  llvm::Expected<ScheduleTable> t = buildSchedule(kind, p, m, v);
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return {};
  }
  return std::move(*t);
}

std::string row(const ScheduleTable &t, int64_t rank) {
  std::string out;
  for (const Action &a : t.actions[rank])
    out += (out.empty() ? "" : " ") + actionName(a, t.chunks > 1);
  return out;
}

std::string checked(const ScheduleTable &t) {
  llvm::Error err = checkSchedule(t);
  return err ? llvm::toString(std::move(err)) : "";
}

Timeline simulated(const ScheduleTable &t, StageCosts costs = {}) {
  llvm::Expected<Timeline> line = simulateSchedule(t, costs);
  if (!line) {
    ADD_FAILURE() << llvm::toString(line.takeError());
    return {};
  }
  return std::move(*line);
}
} // namespace

// The tables written out for p = 4, m = 8 (rank 0 and the last rank), as
// Megatron-LM and the zero-bubble paper draw them.
TEST(Schedule, TablesForFourRanksAndEightMicrobatches) {
  ScheduleTable g = build(ScheduleKind::GPipe, 4, 8);
  EXPECT_EQ(row(g, 0), "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7");
  ScheduleTable f = build(ScheduleKind::OneFOneB, 4, 8);
  EXPECT_EQ(row(f, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(row(f, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  ScheduleTable z = build(ScheduleKind::ZeroBubbleH1, 4, 8);
  // Weight gradients wait until p - 1 = 3 are deferred, then fill the
  // slots the next B leaves.
  EXPECT_EQ(row(z, 3), "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 "
                       "W3 F7 B7 W4 W5 W6 W7");
  EXPECT_EQ(row(z, 0).substr(0, 11), "F0 F1 F2 F3");
  ScheduleTable i = build(ScheduleKind::Interleaved, 4, 8, 2);
  // Warm-up 2 (p - 1) + (v - 1) p = 10 forwards on rank 0: micro-batches
  // 0-3 on chunk 0, 0-3 on chunk 1, then 4-5 on chunk 0.
  EXPECT_EQ(row(i, 0).substr(0, 49),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0");
  for (const ScheduleTable *t : {&g, &f, &z, &i})
    EXPECT_EQ(checked(*t), "") << scheduleName(t->kind).str();
}

// Uniform stages: the simulated bubble is the published formula's, exactly
// for GPipe, 1F1B and interleaving and for ZB-H1 with F = B = W.
TEST(Schedule, SimulatedBubbleMatchesTheFormulas) {
  struct Case {
    ScheduleKind kind;
    int64_t p, m, v;
  };
  for (Case c : {Case{ScheduleKind::GPipe, 4, 8, 1},
                 Case{ScheduleKind::OneFOneB, 4, 8, 1},
                 Case{ScheduleKind::OneFOneB, 2, 16, 1},
                 Case{ScheduleKind::Interleaved, 4, 8, 2},
                 Case{ScheduleKind::Interleaved, 2, 4, 4},
                 Case{ScheduleKind::ZeroBubbleH1, 4, 8, 1},
                 Case{ScheduleKind::ZeroBubbleH1, 8, 24, 1}}) {
    SCOPED_TRACE(scheduleName(c.kind).str() + " p=" + std::to_string(c.p) +
                 " m=" + std::to_string(c.m) + " v=" + std::to_string(c.v));
    Timeline line = simulated(build(c.kind, c.p, c.m, c.v));
    EXPECT_NEAR(line.bubbleFraction,
                formulaBubbleFraction(c.kind, c.p, c.m, c.v), 1e-12);
  }
  // 1F1B with F = 1, B + W = 2: (m + p - 1) * 3 time units.
  EXPECT_DOUBLE_EQ(simulated(build(ScheduleKind::OneFOneB, 4, 8)).makespan,
                   33.0);
}

// GPipe holds every micro-batch's activations, 1F1B at most p - r.
TEST(Schedule, ActivationsInFlight) {
  Timeline g = simulated(build(ScheduleKind::GPipe, 4, 8));
  EXPECT_EQ(g.peakInFlight, (std::vector<int64_t>{8, 8, 8, 8}));
  Timeline f = simulated(build(ScheduleKind::OneFOneB, 4, 8));
  EXPECT_EQ(f.peakInFlight, (std::vector<int64_t>{4, 3, 2, 1}));
  Timeline z = simulated(build(ScheduleKind::ZeroBubbleH1, 4, 8));
  EXPECT_EQ(z.peakInFlight, (std::vector<int64_t>{4, 3, 2, 1}));
  // ZB-H1 defers at most p weight gradients (rank 0: B0-B3 before W0), so
  // what B hands W is held p times; without the split nothing waits for W.
  EXPECT_EQ(z.peakAwaitingW, (std::vector<int64_t>{4, 4, 4, 4}));
  EXPECT_EQ(f.peakAwaitingW, (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(Schedule, RefusesNumbersThatCannotWork) {
  auto error = [](ScheduleKind kind, int64_t p, int64_t m, int64_t v) {
    llvm::Expected<ScheduleTable> t = buildSchedule(kind, p, m, v);
    return t ? std::string() : llvm::toString(t.takeError());
  };
  EXPECT_EQ(error(ScheduleKind::OneFOneB, 4, 2, 1),
            "1f1b needs at least as many micro-batches as pipeline ranks: 2 "
            "micro-batches for 4 ranks");
  EXPECT_EQ(error(ScheduleKind::Interleaved, 4, 6, 2),
            "interleaved needs the micro-batches to be a multiple of the "
            "pipeline ranks: 6 for 4 ranks");
  EXPECT_EQ(error(ScheduleKind::Interleaved, 4, 8, 1),
            "interleaved needs 2 to 64 virtual stages per rank, got 1");
  EXPECT_EQ(error(ScheduleKind::GPipe, 4, 8, 2),
            "gpipe has one stage per rank: virtual stages need "
            "schedule=interleaved");
  EXPECT_EQ(error(ScheduleKind::GPipe, 0, 8, 1),
            "0 pipeline ranks: give 1 to 4096");
  EXPECT_EQ(llvm::toString(parseScheduleKind("2f2b").takeError()),
            "unknown schedule '2f2b' (known: gpipe, 1f1b, interleaved, zb-h1)");
  // GPipe fills with fewer micro-batches than ranks (a bubble, not a hang).
  EXPECT_EQ(checked(build(ScheduleKind::GPipe, 4, 2)), "");
}

// Broken tables: each a mistake a generator could make, each named.
TEST(Schedule, CheckerNamesTheRanksEntriesAndMicrobatch) {
  ScheduleTable t = build(ScheduleKind::OneFOneB, 2, 4);
  // Rank 1 takes micro-batch 1 before 0: the activations arrive 0, 1.
  ScheduleTable swapped = t;
  std::swap(swapped.actions[1][0], swapped.actions[1][2]);
  std::swap(swapped.actions[1][1], swapped.actions[1][3]);
  EXPECT_EQ(checked(swapped),
            "ranks 0 and 1 do not meet in the same order: message 0 from rank "
            "0 to rank 1 is the activation of micro-batch 0 (stage 0 to 1), "
            "sent after F0, but rank 1 receives the activation of "
            "micro-batch 1 (stage 0 to 1) there, for F1");
  // Rank 0 waits for B0's gradient before sending F1's activation, which
  // rank 1 needs first: a cycle of waits.
  ScheduleTable late = t;
  late.actions[0] = {{Phase::Forward, 0}, {Phase::Backward, 0},
                     {Phase::Forward, 1}, {Phase::Backward, 1},
                     {Phase::Forward, 2}, {Phase::Backward, 2},
                     {Phase::Forward, 3}, {Phase::Backward, 3}};
  late.actions[1] = {{Phase::Forward, 0},  {Phase::Forward, 1},
                     {Phase::Backward, 0}, {Phase::Backward, 1},
                     {Phase::Forward, 2},  {Phase::Backward, 2},
                     {Phase::Forward, 3},  {Phase::Backward, 3}};
  EXPECT_EQ(checked(late),
            "the schedule deadlocks: rank 1 waits at F1 for the activation "
            "of micro-batch 1 (stage 0 to 1) from rank 0, and rank 0 waits "
            "at B0 for the input gradient of micro-batch 0 (stage 1 to 0)");
  ScheduleTable missing = t;
  missing.actions[0].pop_back();
  EXPECT_EQ(checked(missing), "rank 0 never runs B3");
  ScheduleTable early = t;
  std::swap(early.actions[1][0], early.actions[1][1]);
  EXPECT_EQ(checked(early), "rank 1 runs B0 (entry 0) before F0");
}

// Every message between ranks becomes an arrow of the timeline: 1F1B on 4
// ranks sends 8 activations and 8 gradients across each of 3 boundaries.
TEST(Schedule, TimelineDrawsEveryEntryAndMessage) {
  ScheduleTable t = build(ScheduleKind::OneFOneB, 4, 8);
  Timeline line = simulated(t);
  EXPECT_EQ(line.transfers.size(), 48u);
  int64_t gradients = 0;
  for (const Transfer &x : line.transfers) {
    gradients += x.gradient;
    // A receiver starts no earlier than its sender ends.
    EXPECT_GE(line.spans[x.toRank][x.toEntry].first,
              line.spans[x.fromRank][x.fromEntry].second);
  }
  EXPECT_EQ(gradients, 24);
  std::string svg = timelineSvg(t, line);
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos;
         at = svg.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("<rect x="), 4u * 16u + 2u); // Entries, then the legend.
  EXPECT_EQ(count("<line "), 48u);
  EXPECT_NE(svg.find("1f1b: 4 ranks, 8 micro-batches"), std::string::npos);
}

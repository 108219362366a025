//===- Schedule.h - pipeline schedule tables and their checks ---*- C++ -*-===//
//
// A pipeline schedule as data: for each pipeline rank, the ordered list of
// what it computes, each entry the forward (F), the backward (B) or the
// weight gradient (W) of one micro-batch on one of the rank's virtual stages
// (with the backward split, as zero-bubble schedules split it, B computes
// only the input gradient the previous stage waits for, and W the weight
// gradients nobody waits for). Generators build the tables of GPipe, 1F1B,
// interleaved 1F1B and ZB-H1; checkSchedule proves a table complete and
// free of deadlock for the sends and receives it implies; simulateSchedule
// times it. The compiler writes the table into the bundle's sched.schedule,
// and the runtime only walks it.
//
// Stages and ranks: with `ranks` pipeline ranks and `chunks` virtual stages
// per rank (interleaving's v), the model has ranks * chunks stages and rank
// r holds stages r, r + ranks, r + 2 ranks, ... (Megatron's layout), so
// chunk c of rank r is stage c * ranks + r.
//
// Communication: F of stage s > 0 receives stage s - 1's activation of its
// micro-batch, and F of a stage before the last sends its own; B of a stage
// before the last receives the next stage's input gradient, and B of stage
// s > 0 sends its own. Sends are posted without waiting (the runtime waits
// for their completion before the step ends); receives wait. Messages
// between two ranks are matched in order, as NCCL's and Gloo's point-to-
// point operations match them, so peers must post them in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PIPELINE_SCHEDULE_H
#define WEFT_PASSES_PIPELINE_SCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::pipeline {

enum class Phase { Forward, Backward, WeightGrad };

struct Action {
  Phase phase = Phase::Forward;
  int64_t microbatch = 0;
  int64_t chunk = 0; // The rank's virtual stage (0 without interleaving).

  bool operator==(const Action &other) const {
    return phase == other.phase && microbatch == other.microbatch &&
           chunk == other.chunk;
  }
};

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };

/// The plan's spelling of each kind: gpipe, 1f1b, interleaved, zb-h1.
llvm::StringRef scheduleName(ScheduleKind kind);
llvm::Expected<ScheduleKind> parseScheduleKind(llvm::StringRef name);

struct ScheduleTable {
  ScheduleKind kind = ScheduleKind::GPipe;
  int64_t ranks = 1, microbatches = 1, chunks = 1;
  /// Whether the backward is split into B and W entries.
  bool splitBackward = false;
  std::vector<std::vector<Action>> actions; // One list per rank.

  int64_t stages() const { return ranks * chunks; }
  int64_t stageOf(int64_t rank, int64_t chunk) const {
    return chunk * ranks + rank;
  }
};

/// The table of `kind` for `ranks` pipeline ranks, `microbatches`
/// micro-batches and `chunks` virtual stages per rank (interleaved only;
/// 1 for the others). Errors say which constraint the numbers break:
/// 1F1B-style schedules need at least as many micro-batches as ranks,
/// interleaving needs chunks >= 2 and micro-batches a multiple of ranks.
llvm::Expected<ScheduleTable> buildSchedule(ScheduleKind kind, int64_t ranks,
                                            int64_t microbatches,
                                            int64_t chunks = 1);

/// Proves `table` runs: every rank computes each of its stages' F, B (and
/// W) of every micro-batch once, each after what it needs on the same rank;
/// every pair of ranks posts its messages in the same order; and no cycle
/// of ranks waiting on each other's receives exists. The error names the
/// two ranks, the entries and the micro-batch where it fails.
llvm::Error checkSchedule(const ScheduleTable &table);

/// Durations of one stage's F, B and W (B without a split backward is
/// backward + weightGrad). Per stage: an interleaved rank's chunk is a
/// `chunks`-th of the rank's layers, so simulateSchedule divides by it.
struct StageCosts {
  double forward = 1, backward = 1, weightGrad = 1;
};

/// A message between ranks: entry `fromEntry` of rank `fromRank` sends
/// what entry `toEntry` of rank `toRank` receives.
struct Transfer {
  int64_t fromRank = 0, fromEntry = 0, toRank = 0, toEntry = 0;
  bool gradient = false; // Else an activation.
};

struct Timeline {
  /// Per rank, per entry of the table: when it starts and ends.
  std::vector<std::vector<std::pair<double, double>>> spans;
  /// Every message between two different ranks.
  std::vector<Transfer> transfers;
  double makespan = 0;
  /// Idle time of all ranks over their compute time (the bubble fraction
  /// the formulas (p - 1) / m ... state).
  double bubbleFraction = 0;
  /// Per rank, the most micro-batches whose forward ran and whose backward
  /// (B) has not: the activations the schedule holds at once.
  std::vector<int64_t> peakInFlight;
  /// With the backward split: per rank, the most micro-batches whose B ran
  /// and whose W has not (what B hands W is held that long).
  std::vector<int64_t> peakAwaitingW;
};

/// Times `table` (which must pass checkSchedule) with messages arriving as
/// they are sent.
llvm::Expected<Timeline> simulateSchedule(const ScheduleTable &table,
                                          const StageCosts &costs = {});

/// The published bubble fraction of `kind` with uniform stages and
/// F = B = W: (p - 1) / m for GPipe and 1F1B, (p - 1) / (v m) interleaved,
/// (p - 1) / (3 m) for ZB-H1 (Qi et al. 2023).
double formulaBubbleFraction(ScheduleKind kind, int64_t ranks,
                             int64_t microbatches, int64_t chunks = 1);

/// `line` of `table` drawn as SVG: one row per rank, time to the right,
/// forward, backward and weight-gradient entries in three colours labelled
/// with their micro-batch, and an arrow per message between ranks.
std::string timelineSvg(const ScheduleTable &table, const Timeline &line);

/// One entry as the tables print it: F3, B3, W3; with chunks, F3.1 for
/// micro-batch 3 on chunk 1.
std::string actionName(const Action &action, bool withChunk);

} // namespace weft::pipeline

#endif // WEFT_PASSES_PIPELINE_SCHEDULE_H

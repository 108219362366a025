//===- Replay.h - running a step again to tell a transient fault -*- C++
//-*-===//
//
// Silent data corruption is either transient (a bit flipped once in a
// register or on a link: running the same step again gives other bits) or
// persistent (a bad memory cell or a broken unit: every run gives the same
// wrong bits). `weft-run --sdc-check every=N,replay` runs every Nth step
// twice from the same state and compares every tensor's hash, as
// Megatron-LM's rerun state machine re-runs an iteration in place:
//   - the runs agree: no transient fault (a replica check after it that
//     fails then points at a persistent one, ReplicaCheck.h);
//   - they differ: a transient fault. A third run decides which of the
//     two was right (the two of three that agree), the job keeps that
//     result and goes on, and the rank whose runs differed is named;
//   - all three differ: the rank cannot compute the same step twice, an
//     error.
// Every rank runs every run (the step's collectives need all of them).
// Costs one more step every N (two when a fault is found) and two host
// copies of the rank's tensors.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_REPLAY_H
#define WEFT_RUNTIME_TRAIN_REPLAY_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/support/Log.h"
#include "runtime/train/TrainLoop.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace weft::runtime {

/// A host copy of every parameter and state tensor of this rank, to go
/// back to.
class StateCopy {
public:
  absl::Status take(const SchedExecutor &ex);
  absl::Status restore(SchedExecutor &ex) const;

private:
  std::vector<std::vector<float>> tensors; // Per bundle parameter.
};

/// XXH64 of every parameter and state tensor of this rank, in bundle order.
absl::StatusOr<std::vector<uint64_t>> hashState(const SchedExecutor &ex);

/// The loop's next step, run and replayed as above; `afterFirstRun` runs
/// after the first run only (WEFT_INJECT's glitch). Returns the report of
/// the run the job keeps. The leader logs a transient fault.
absl::StatusOr<StepReport>
replayedStep(TrainLoop &loop, SchedExecutor &ex, Communicator *comm,
             const std::function<absl::Status()> &afterFirstRun, const Log &log,
             bool leader);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_REPLAY_H

//===- ReplicaCheck.h - silent-data-corruption checks -----------*- C++ -*-===//
//
// Data-parallel replicas hold the same bits of every tensor not split over
// dp (the parameters, and without ZeRO AdamW's state): after an update
// they must still. `weft-run --sdc-check every=N` hashes each such block
// (XXH64) on every rank and compares the hashes over dp; a difference is a
// fault of the hardware (or a nondeterministic kernel), which would
// otherwise train on silently. The error names the tensor and the rank
// that disagrees with the others (with two replicas, which one is wrong
// cannot be told: both are named).
//
// WEFT_INJECT=bitflip:rank=R:step=S:param=NAME flips one bit of element 0
// of NAME's block on rank R before step S, so the check is tested
// (runtime/train/FaultInjection.h). With `,replay` the checked steps are
// also run twice, which tells a transient fault from a persistent one
// (runtime/train/Replay.h).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_REPLICACHECK_H
#define WEFT_RUNTIME_TRAIN_REPLICACHECK_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedExecutor.h"

#include "absl/status/statusor.h"

#include <string>

namespace weft::runtime {

/// Compares every dp replica's copy of each tensor not split over dp after
/// `step`; OK without a dp axis of two or more. A collective over dp.
/// `replayed`: the step was run twice with the same result (Replay.h), so a
/// difference is a persistent fault, and the error says so.
absl::Status checkReplicas(SchedExecutor &ex, Communicator *comm, int64_t step,
                           bool replayed = false);

/// `--sdc-check`'s value.
struct SdcCheck {
  int64_t every = 0;   // 0: never.
  bool replay = false; // Also run the step twice (Replay.h).
};

/// "" (never), "every=N" (N >= 1) or "every=N,replay".
absl::StatusOr<SdcCheck> parseSdcCheck(const std::string &text);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_REPLICACHECK_H

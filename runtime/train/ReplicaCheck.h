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
// (runtime/train/FaultInjection.h).
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
absl::Status checkReplicas(SchedExecutor &ex, Communicator *comm, int64_t step);

/// `--sdc-check`'s value: "" (never) or "every=N" (N >= 1); 0 for never.
absl::StatusOr<int64_t> parseSdcCheck(const std::string &text);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_REPLICACHECK_H

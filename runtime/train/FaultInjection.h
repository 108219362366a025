//===- FaultInjection.h - faults on purpose, for tests ----------*- C++ -*-===//
//
// Every fault-tolerance claim is tested by causing the fault: WEFT_INJECT
// holds a comma-separated list of faults, each
//
//   KIND:rank=R:step=S[:param=NAME][:bit=B][:attempt=A]
//
// applied on rank R just before step S:
//   bitflip  flips bit B (default 20, a mantissa bit; 23-30 are the
//            exponent's) of element 0 of NAME's block (the SDC check's
//            prey: runtime/train/ReplicaCheck.h);
//   nan      makes element 0 of NAME's block a NaN;
//   kill     the rank kills itself with SIGKILL (kill -9: no cleanup, no
//            message; the launcher and the other ranks must notice);
//   stop     the rank stops itself with SIGSTOP (a hung rank: only the
//            collective timeout notices);
//   glitch   like bitflip, but just after step S's first run (a result
//            computed wrong once: a transient fault, which
//            --sdc-check every=N,replay's replay does not repeat);
//   lose     the rank's device is gone for good: it exits with
//            kRankLostExit (runtime/dist/Launcher.h), so the launcher
//            restarts the job only on fewer ranks (weft-run --elastic).
// With attempt=A a fault happens only in attempt A of a job that
// --max-restarts restarts (weft-run numbers attempts from 0), so a restart
// does not meet it again; without it, in every attempt.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_FAULTINJECTION_H
#define WEFT_RUNTIME_TRAIN_FAULTINJECTION_H

#include "runtime/exec/SchedExecutor.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

struct Fault {
  enum class Kind { BitFlip, NaN, Kill, Stop, Lose, Glitch };
  Kind kind = Kind::Kill;
  int64_t rank = -1, step = -1;
  std::string param;    // BitFlip, Glitch and NaN.
  int64_t bit = -1;     // BitFlip and Glitch: -1 for 20.
  int64_t attempt = -1; // -1: every attempt.
};

/// Parses WEFT_INJECT's value; errors quote the text and the grammar.
absl::StatusOr<std::vector<Fault>> parseFaults(const std::string &text);

/// Applies the faults of `faults` due on `rank` before `step` in attempt
/// `attempt` (kill and stop do not return while the rank is killed or
/// stopped), or with `afterStep` the glitches due just after it. Errors
/// name a parameter the bundle lacks.
absl::Status injectFaults(SchedExecutor &ex, const std::vector<Fault> &faults,
                          int64_t rank, int64_t step, int64_t attempt,
                          bool afterStep = false);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_FAULTINJECTION_H

//===- LossSpike.h - loss spikes against a running mean ---------*- C++ -*-===//
//
// A loss spike (a step whose loss jumps far above the recent ones) often
// comes before a divergence; PaLM's remedy was to skip the batches around
// it. `weft-run --loss-spike F[:warn|skip|stop]` compares each step's loss
// with the mean of the last `window` unspiked steps' (once 10 are in): a
// loss above F times that mean, or one that is not finite, is a spike, and
// the run warns, skips the step (the update is undone: every tensor goes
// back to what the last good step left; its batch is not drawn again) or
// stops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_LOSSSPIKE_H
#define WEFT_RUNTIME_TRAIN_LOSSSPIKE_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/support/Log.h"
#include "runtime/train/Replay.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace weft::runtime {

struct LossSpikePolicy {
  enum class Action { Warn, Skip, Stop };
  double factor = 0; // 0: off.
  Action action = Action::Stop;
  int64_t window = 100;
};

/// `--loss-spike`'s value: "" (off) or "F[:warn|skip|stop]" with F > 1
/// (stop by default).
absl::StatusOr<LossSpikePolicy> parseLossSpike(const std::string &text);

/// The running window of recent losses.
class LossSpikeDetector {
public:
  explicit LossSpikeDetector(LossSpikePolicy policy) : policy(policy) {}
  /// Whether `loss` is a spike (not finite, or above the factor times the
  /// mean of ten or more recent losses).
  bool isSpike(double loss) const;
  /// Adds an unspiked step's loss to the window (the oldest leaves it).
  void record(double loss);
  /// The window's mean (0 when empty).
  double mean() const;
  const LossSpikePolicy &policyOf() const { return policy; }

private:
  LossSpikePolicy policy;
  std::deque<double> recent;
  double sum = 0;
};

/// --loss-spike on a running job: the detector, every rank's verdict
/// agreed, and with skip a host copy of every tensor as the last good step
/// left it, to undo a spiked step with.
class LossSpikeGuard {
public:
  explicit LossSpikeGuard(LossSpikePolicy policy) : detector(policy) {}
  bool skips() const {
    return detector.policyOf().action == LossSpikePolicy::Action::Skip;
  }
  /// Before the first step: the state to go back to.
  absl::Status begin(const SchedExecutor &ex);
  /// After step `step` of loss `loss` (a collective over `comm`): whether
  /// it spiked, said by the `leader`; with stop an error, with skip the
  /// step undone.
  absl::StatusOr<bool> afterStep(SchedExecutor &ex, Communicator *comm,
                                 int64_t step, double loss, const Log &log,
                                 bool leader);

private:
  LossSpikeDetector detector;
  StateCopy lastGood;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_LOSSSPIKE_H

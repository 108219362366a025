//===- LossSpike.cpp - loss spikes against a running mean -----------------===//

#include "runtime/train/LossSpike.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include <cmath>

namespace weft::runtime {

absl::StatusOr<LossSpikePolicy> parseLossSpike(const std::string &text) {
  LossSpikePolicy policy;
  if (text.empty())
    return policy;
  size_t colon = text.find(':');
  std::string factor = text.substr(0, colon);
  std::string action =
      colon == std::string::npos ? "stop" : text.substr(colon + 1);
  if (!absl::SimpleAtod(factor, &policy.factor) ||
      !std::isfinite(policy.factor) || policy.factor <= 1 ||
      (action != "warn" && action != "skip" && action != "stop"))
    return absl::InvalidArgumentError(absl::StrCat(
        "--loss-spike '", text,
        "' is not F[:warn|skip|stop] with F a factor above 1 (a loss above "
        "F times the running mean is a spike)"));
  policy.action = action == "warn"   ? LossSpikePolicy::Action::Warn
                  : action == "skip" ? LossSpikePolicy::Action::Skip
                                     : LossSpikePolicy::Action::Stop;
  return policy;
}

bool LossSpikeDetector::isSpike(double loss) const {
  // Ten steps at least before anything is judged: the first losses fall
  // fast and say little about the next.
  return !std::isfinite(loss) ||
         (recent.size() >= 10 && loss > policy.factor * mean());
}

void LossSpikeDetector::record(double loss) {
  recent.push_back(loss);
  sum += loss;
  if (static_cast<int64_t>(recent.size()) > policy.window) {
    sum -= recent.front();
    recent.pop_front();
  }
}

double LossSpikeDetector::mean() const {
  return recent.empty() ? 0 : sum / static_cast<double>(recent.size());
}

absl::Status LossSpikeGuard::begin(const SchedExecutor &ex) {
  if (!skips())
    return absl::OkStatus();
  return lastGood.take(ex);
}

absl::StatusOr<bool> LossSpikeGuard::afterStep(SchedExecutor &ex,
                                               Communicator *comm, int64_t step,
                                               double loss, const Log &log,
                                               bool leader) {
  // Every rank reports the job's loss; they agree all the same, and only
  // then does an unspiked loss join the window.
  double mean = detector.mean();
  float spiked = detector.isSpike(loss) ? 1.0f : 0.0f;
  if (comm)
    if (absl::Status agreed = comm->allReduce({}, &spiked, 1, /*max=*/true);
        !agreed.ok())
      return agreed;
  if (spiked == 0) {
    detector.record(loss);
    if (absl::Status kept = begin(ex); !kept.ok()) // The new last good.
      return kept;
    return false;
  }
  const LossSpikePolicy &policy = detector.policyOf();
  std::string what =
      absl::StrCat("step ", step, ": loss spike: ", loss, " against ", mean,
                   ", the mean of the last steps "
                   "(--loss-spike ",
                   policy.factor, ")");
  if (policy.action == LossSpikePolicy::Action::Stop)
    return absl::AbortedError(what +
                              "; stopped. Resume from the last checkpoint, "
                              "perhaps with a lower --lr, or skip spikes with "
                              "--loss-spike F:skip");
  if (skips()) {
    if (absl::Status back = lastGood.restore(ex); !back.ok())
      return back;
    what += "; the step is undone and its batch skipped";
  }
  if (leader)
    log.say(what);
  return true;
}

} // namespace weft::runtime

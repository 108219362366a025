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

} // namespace weft::runtime

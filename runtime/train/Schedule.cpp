//===- Schedule.cpp - learning-rate schedules -----------------------------===//

#include "runtime/train/Schedule.h"

#include <algorithm>
#include <cmath>

namespace weft::runtime {

double LrSchedule::at(int64_t step) const {
  if (warmupSteps > 0 && step <= warmupSteps)
    return peak * static_cast<double>(step) / static_cast<double>(warmupSteps);
  double floor = peak * minRatio;
  int64_t decaySteps = totalSteps - warmupSteps;
  if (decaySteps <= 0 || step >= totalSteps)
    return step >= totalSteps && decaySteps > 0 ? floor : peak;
  double progress =
      static_cast<double>(step - warmupSteps) / static_cast<double>(decaySteps);
  return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * progress));
}

} // namespace weft::runtime

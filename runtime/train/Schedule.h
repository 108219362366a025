//===- Schedule.h - learning-rate schedules ---------------------*- C++ -*-===//
//
// The runtime computes each step's learning rate and passes it to the
// compiled step (its `lr` input); the reference trainer uses the same code.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_SCHEDULE_H
#define WEFT_RUNTIME_TRAIN_SCHEDULE_H

#include <cstdint>

namespace weft::runtime {

/// Linear warm-up to `peak` over `warmupSteps`, then cosine decay to
/// `peak * minRatio` at `totalSteps` (held there after), as nanoGPT and
/// Megatron-LM do.
struct LrSchedule {
  double peak = 1e-3;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 1;
  double minRatio = 0.1;

  /// The learning rate of 1-based step `step`.
  double at(int64_t step) const;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_SCHEDULE_H

//===- TrainSchedule.h - one training step as the bundle schedules it -*- C++
//-*-===//
//
// The runtime does not decide what a step runs: the bundle's `train`
// schedule lists the programs and micro-batches in order (one `step` run;
// with gradient accumulation, `accumulate` once per micro-batch, then
// `step`). This walks it. A program's inputs are, in this order and each
// pair optional: its micro-batch's tokens and labels ([rows, seq] I32), the
// learning rate and the step number (0-d F32).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H
#define WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H

#include "runtime/exec/SchedBundle.h"
#include "runtime/exec/SchedExecutor.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include <string>
#include <vector>

namespace weft::runtime {

/// What a training step runs on every rank, from the bundle's `train`
/// schedule (checked: one sequence for every rank, programs whose inputs
/// follow the convention above, all taking tokens of one [rows, seq]).
struct TrainSteps {
  std::vector<sched::Run> runs;
  int64_t microbatches = 1;
  /// This rank's rows and the sequence length of one micro-batch.
  int64_t rows = 0, seq = 0;
  /// Per program (by index into the bundle's), whether it takes the
  /// micro-batch's tokens and labels, and lr and step.
  std::vector<bool> takesTokens, takesRates;
  /// The program that reports the step's loss and gradient norm (the last
  /// run's).
  std::string reporter;
  /// The first program run that takes tokens (its token input's split is
  /// how the step's batch is laid out on the ranks).
  const sched::ProgramInput *tokens = nullptr;
};

/// Reads and checks the `train` schedule; errors name the bundle's
/// directory and what does not fit.
absl::StatusOr<TrainSteps> trainSteps(const sched::SchedBundle &bundle);

/// Runs one step: `tokens` and `labels` hold this rank's rows of the step's
/// batch, micro-batch after micro-batch (`microbatches` x `rows` rows of
/// `seq`). `Exec` is a SchedExecutor or anything with its run().
template <typename Exec>
absl::Status runTrainSteps(Exec &exec, const TrainSteps &steps,
                           const int32_t *tokens, const int32_t *labels,
                           float lr, float step) {
  for (const sched::Run &run : steps.runs) {
    size_t offset = run.microbatch * steps.rows * steps.seq;
    std::vector<HostTensor> inputs;
    if (steps.takesTokens[run.programIndex]) {
      inputs.push_back({{steps.rows, steps.seq}, DType::I32, tokens + offset});
      inputs.push_back({{steps.rows, steps.seq}, DType::I32, labels + offset});
    }
    if (steps.takesRates[run.programIndex]) {
      inputs.push_back({{}, DType::F32, &lr});
      inputs.push_back({{}, DType::F32, &step});
    }
    if (absl::Status s = exec.run(run.program, inputs); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H

//===- TrainSchedule.h - one training step as the bundle schedules it -*- C++
//-*-===//
//
// The runtime does not decide what a step runs: the bundle's `train`
// schedule lists the programs and micro-batches in order (one `step` run;
// with gradient accumulation, `accumulate` once per micro-batch, then
// `step`; with pipeline stages, one sequence per pp coordinate of stage
// forwards, backwards and the rank's step). This walks this rank's
// sequence. A program's inputs are, in this order: optionally its
// micro-batch's tokens and labels ([rows, seq] I32), then either the
// learning rate and the step number (0-d F32) or the stash of its
// micro-batch: the outputs named stash.0, stash.1, ... of the last program
// this rank ran for the same micro-batch and chunk (a stage's forward
// hands its backward what it kept), in order.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H
#define WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H

#include "runtime/exec/SchedBundle.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/support/Float.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace weft::runtime {

/// What a training step runs on every rank, from the bundle's `train`
/// schedule (checked: one sequence for every rank, programs whose inputs
/// follow the convention above, all taking tokens of one [rows, seq]).
struct TrainSteps {
  /// This rank's sequence.
  std::vector<sched::Run> runs;
  int64_t microbatches = 1;
  /// This rank's rows and the sequence length of one micro-batch.
  int64_t rows = 0, seq = 0;
  /// Per program (by index into the bundle's), whether it takes the
  /// micro-batch's tokens and labels, and lr and step.
  std::vector<bool> takesTokens, takesRates;
  /// Per program: how many stash inputs it takes, and its stash outputs.
  std::vector<int64_t> stashInputs, stashOutputs;
  /// Whether a program this rank runs sends (the step then waits for the
  /// sends to complete: Exec::finishSends).
  bool sends = false;
  /// The program that reports the step's loss and gradient norm (the last
  /// run's), and whether it also reports dynamic loss scaling's
  /// loss_scale and skipped.
  std::string reporter;
  bool scalesLoss = false;
  /// The first program run that takes tokens (its token input's split is
  /// how the step's batch is laid out on the ranks); null on a pipeline
  /// rank whose stages read neither tokens nor labels.
  const sched::ProgramInput *tokens = nullptr;
};

/// Reads and checks the `train` schedule's sequence for `rank` (its
/// coordinate along the sequences' axis picks one); errors name the
/// bundle's directory and what does not fit.
absl::StatusOr<TrainSteps> trainSteps(const sched::SchedBundle &bundle,
                                      int64_t rank = 0);

/// Runs one step: `tokens` and `labels` hold this rank's rows of the step's
/// batch, micro-batch after micro-batch (`microbatches` x `rows` rows of
/// `seq`). `Exec` is a SchedExecutor or anything with its run().
template <typename Exec>
absl::Status runTrainSteps(Exec &exec, const TrainSteps &steps,
                           const int32_t *tokens, const int32_t *labels,
                           float lr, float step) {
  // Stashes by (micro-batch, chunk), from the run that made them to the
  // next that takes them.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::vector<float>>> kept;
  for (const sched::Run &run : steps.runs) {
    size_t offset = run.microbatch * steps.rows * steps.seq;
    int64_t p = run.programIndex;
    std::vector<HostTensor> inputs;
    if (steps.takesTokens[p]) {
      inputs.push_back({{steps.rows, steps.seq}, DType::I32, tokens + offset});
      inputs.push_back({{steps.rows, steps.seq}, DType::I32, labels + offset});
    }
    if (steps.takesRates[p]) {
      inputs.push_back({{}, DType::F32, &lr});
      inputs.push_back({{}, DType::F32, &step});
    }
    std::pair<int64_t, int64_t> key{run.microbatch, run.chunk};
    std::vector<std::vector<float>> stash;
    std::deque<std::vector<int32_t>> stashIds;   // Stable for `inputs`.
    std::deque<std::vector<uint8_t>> stashBytes; // Likewise.
    if (steps.stashInputs[p] > 0) {
      auto it = kept.find(key);
      if (it == kept.end() ||
          static_cast<int64_t>(it->second.size()) != steps.stashInputs[p])
        return absl::FailedPreconditionError(absl::StrCat(
            "program '", run.program, "' of micro-batch ", run.microbatch,
            " takes ", steps.stashInputs[p],
            " stashed values, but this rank's last program for it kept ",
            it == kept.end() ? 0 : it->second.size()));
      stash = std::move(it->second);
      kept.erase(it);
      const auto &in = exec.bundle().programs[p].inputs;
      size_t first = in.size() - stash.size();
      for (size_t i = 0; i < stash.size(); ++i) {
        const sched::TensorType &type = in[first + i].type;
        if (type.dtype == DType::F32) {
          inputs.push_back({type.shape, DType::F32, stash[i].data()});
          continue;
        }
        if (type.dtype != DType::I32) {
          // A bf16 or f16 activation, decoded by the output that kept it
          // (trainSteps checked it was stored so): encoded back to the same
          // bits (a NaN to the canonical NaN).
          size_t width = dtypeSize(type.dtype);
          std::vector<uint8_t> &bytes =
              stashBytes.emplace_back(stash[i].size() * width);
          for (size_t j = 0; j < stash[i].size(); ++j)
            encode(stash[i][j], type.dtype, bytes.data() + j * width);
          inputs.push_back({type.shape, type.dtype, bytes.data()});
          continue;
        }
        // Routing positions and counts travel as the f32 the executor's
        // outputs decode to, exact below 2^24.
        std::vector<int32_t> &ids = stashIds.emplace_back(stash[i].size());
        for (size_t j = 0; j < ids.size(); ++j) {
          if (!(std::fabs(stash[i][j]) < 16777216.0f))
            return absl::OutOfRangeError(absl::StrCat(
                "program '", run.program, "': stashed i32 input ", i, " holds ",
                stash[i][j], ", past the 2^24 a stash keeps"));
          ids[j] = static_cast<int32_t>(stash[i][j]);
        }
        inputs.push_back({type.shape, DType::I32, ids.data()});
      }
    }
    // Where this rank stands in the schedule, so that a receive or
    // collective that times out says which entry each rank was at.
    if (absl::Status s = exec.run(run.program, inputs); !s.ok())
      return absl::Status(
          s.code(),
          absl::StrCat("schedule entry ", &run - &steps.runs[0], " (",
                       run.program, ", micro-batch ", run.microbatch,
                       run.chunk ? absl::StrCat(", chunk ", run.chunk) : "",
                       "): ", s.message()));
    for (int64_t i = 0; i < steps.stashOutputs[p]; ++i) {
      absl::StatusOr<std::vector<float>> v =
          exec.output(run.program, absl::StrCat("stash.", i));
      if (!v.ok())
        return v.status();
      kept[key].push_back(std::move(*v));
    }
  }
  if (steps.sends)
    if (absl::Status s = exec.finishSends(); !s.ok())
      return absl::Status(s.code(),
                          absl::StrCat("end of the schedule: ", s.message()));
  return absl::OkStatus();
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_TRAINSCHEDULE_H

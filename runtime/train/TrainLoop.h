//===- TrainLoop.h - training a bundle --------------------------*- C++ -*-===//
//
// What weft-run and the JIT API share: batches of the data's shuffled
// windows (runtime/data/Dataset.h), the
// learning-rate schedule, one compiled step per call, and, with the
// forward program, the loss on held-out data and sampling text.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_TRAINLOOP_H
#define WEFT_RUNTIME_TRAIN_TRAINLOOP_H

#include "runtime/data/Dataset.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/train/Schedule.h"
#include "runtime/train/TrainSchedule.h"

#include <functional>
#include <future>
#include <optional>

namespace weft::runtime {

struct StepReport {
  int64_t step = 0;
  double loss = 0;
  double gradNorm = 0;
  double lr = 0;
  double seconds = 0;
  int64_t tokens = 0;
  /// Per MoE layer this rank routes (its expert_route instructions in
  /// program order), the (token, choice) pairs the step sent to each
  /// expert, dropped ones included: the distribution of routing decisions.
  std::vector<std::vector<int64_t>> expertPairs;
  /// With dynamic loss scaling (the step's outputs loss_scale and
  /// skipped): the scale this step used, and whether its gradients
  /// overflowed, so it changed nothing.
  std::optional<double> lossScale;
  bool skipped = false;
  /// Seconds the step waited for a checkpoint's snapshot (0: none saved).
  double checkpointSeconds = 0;
  /// Seconds the step waited for its batch (the prefetch of the step
  /// before should have read it already).
  double dataWaitSeconds = 0;
  /// The step's matrix FLOPs over every rank, as the compiler counted them
  /// (the bundle's meta step_flops; 0 when it has none): the model's, and
  /// what runs (recomputation included).
  double modelFlops = 0, hardwareFlops = 0;
  /// --loss-spike: the loss spiked (runtime/train/LossSpike.h), and the
  /// step was undone (skipped) or only reported.
  bool lossSpike = false;
  /// --grad-spike: the gradient norm spiked (reported, nothing undone).
  bool gradNormSpike = false;
  /// The health probes (weftc compile --probes), in the bundle's order:
  /// each metric's value (a vector for per-expert loads), its micro-batches
  /// folded as the bundle says; under pp every stage's, gathered.
  std::vector<std::pair<std::string, std::vector<double>>> probes;
};

/// Reads, folds (by the bundle's probe_fold, over `microbatches` runs of
/// the forward) and zeroes the health probes this rank holds; under pp,
/// gathers the other stages' too (a collective every rank runs).
absl::StatusOr<std::vector<std::pair<std::string, std::vector<double>>>>
takeProbes(SchedExecutor &executor, int64_t microbatches);

/// One pass of the forward program over held-out data (TrainLoop::
/// evaluate).
struct EvalReport {
  int64_t step = 0; // Training steps done when it ran.
  double loss = 0;  // The mean over its tokens.
  int64_t tokens = 0, batches = 0;
  double seconds = 0;
};

class TrainLoop {
public:
  /// Checks that `bundle` has what training needs: a `train` schedule whose
  /// programs take what it feeds them (see TrainSchedule.h) and
  /// forward(tokens, labels) of one micro-batch's [B, S].
  static absl::Status check(const sched::SchedBundle &bundle);

  /// Step n's global batch (every micro-batch's rows) is the windows at
  /// positions (n - 1) * rows to n * rows - 1 of `data`'s shuffled epochs,
  /// on every plan; each rank reads only the rows its mesh position owns
  /// (the token input's sharding) and feeds them to its programs,
  /// micro-batch by micro-batch.
  TrainLoop(SchedExecutor &executor, DataMixture data, LrSchedule schedule);

  /// Runs the next step.
  absl::StatusOr<StepReport> step();
  int64_t stepsDone() const { return steps; }
  /// The job's batch, [rows, tokens per row]: the same on every plan of
  /// one run (a checkpoint's run fact).
  std::vector<int64_t> globalBatchShape() const {
    return {globalBatch, globalSeq};
  }
  /// Continues after `done` steps (a resumed checkpoint's): the batches and
  /// the learning rate are functions of the step, so step done + 1 draws
  /// what an uninterrupted run would (the data's position is done times
  /// the global batch's rows).
  void resumeAt(int64_t done);
  /// Whether a non-finite loss or gradient norm is the caller's to handle
  /// (--loss-spike F:skip undoes the step) instead of an error.
  void tolerateNonFinite(bool tolerate) { nonFiniteOk = tolerate; }

  /// Whether `bundle`'s forward program can evaluate held-out data: it has
  /// one, and it takes its tokens as the train programs do (the same
  /// split and sequence chunks), so a micro-batch's rows feed it alike.
  static absl::Status checkEvaluate(const sched::SchedBundle &bundle);
  /// The forward program's mean loss over `heldOut`'s windows in file order
  /// (the sources one after another; ShuffledWindows::inOrder) in batches
  /// of the job's rows, each run micro-batch by micro-batch: the first
  /// `maxBatches` batches (0: every whole one; the windows past the last
  /// whole one are left out), so every plan of one job's batch evaluates
  /// the same windows. Every rank runs it (the forward has collectives)
  /// and reads only its own block, as in a step; the loss is the job's,
  /// the same on every rank. The training's data and steps are untouched.
  absl::StatusOr<EvalReport>
  evaluate(const std::vector<ShuffledWindows> &heldOut, int64_t maxBatches);
  /// The batches evaluate() runs, or an error when `heldOut` holds less
  /// than one.
  absl::StatusOr<int64_t>
  evalBatches(const std::vector<ShuffledWindows> &heldOut,
              int64_t maxBatches) const;
  /// Before training: that `heldOut` holds a batch, and that every window
  /// evaluate() will read reads (its ids are in the model's vocabulary).
  absl::Status checkHeldOut(const std::vector<ShuffledWindows> &heldOut,
                            int64_t maxBatches) const;

  /// Continues `context` by `count` tokens with the forward program, drawing
  /// each from softmax(logits / temperature) with a seeded generator
  /// (temperature 0 picks the most likely token).
  absl::StatusOr<std::vector<uint32_t>> sample(std::vector<uint32_t> context,
                                               int64_t count,
                                               double temperature,
                                               uint64_t seed);

private:
  SchedExecutor &executor;
  MeshSpec mesh;
  DataMixture data;
  LrSchedule schedule;
  TrainSteps runs;
  /// This rank's programs take a [batch, seq] block of the job's
  /// [globalBatch, globalSeq] batch, at `start` (rows under data
  /// parallelism, columns under sequence parallelism).
  int64_t batch, seq, globalBatch, globalSeq;
  /// 0, or context parallelism's load-balanced chunks of the sequence.
  int64_t sequenceChunks = 0;
  std::vector<int64_t> start;
  std::vector<int32_t> reordered; // One row, while reordering.
  int64_t steps = 0;
  bool nonFiniteOk = false;
  /// The bundle's meta step_flops (0: none).
  double modelFlops = 0, hardwareFlops = 0;
  std::vector<int32_t> tokens, labels;
  /// The job's batch as a [rows, seq] array holding only this rank's rows.
  struct Rows {
    std::vector<int32_t> tokens, labels;
  };
  Rows global;
  /// Reads step `n`'s rows of this rank; const and on its own buffers, so
  /// it runs on the prefetch thread.
  absl::StatusOr<Rows> readRows(int64_t n) const;
  /// The rows this rank owns of the first `count` micro-batches of a job's
  /// batch, in the batch's [rows, globalSeq] layout (the others left
  /// zero); `read(row, tokens, labels)` reads the batch's row `row`.
  using ReadRow = std::function<absl::Status(int64_t, int32_t *, int32_t *)>;
  absl::StatusOr<Rows> readOwnRows(int64_t count, const ReadRow &read) const;
  /// Cuts this rank's block of `count` micro-batches from `rows` (read by
  /// readOwnRows; reordered in place first under context parallelism)
  /// into `tokens` and `labels`, micro-batch after micro-batch.
  void cutOwnBlock(Rows &rows, int64_t count);
  /// The next step's rows, read behind the current step (one ahead).
  std::future<absl::StatusOr<Rows>> ahead;
  int64_t aheadStep = 0;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_TRAINLOOP_H

//===- Job.h - one rank's training job --------------------------*- C++ -*-===//
//
// What weft-run runs on every rank, as a library: join the job, load the
// bundle onto the device, start from seeded or saved weights, then train
// on batches of the data under the learning-rate schedule, write metrics
// (with every rank's peak memory), save the parameters gathered from their
// shards and sample text. Rank 0 prints and writes; every rank takes part
// in the collectives. A host program that has an executor already (the JIT
// API's) runs the second half, trainJob, on it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_JOB_H
#define WEFT_RUNTIME_TRAIN_JOB_H

#include "runtime/data/Dataset.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/support/Log.h"
#include "runtime/train/LossSpike.h"
#include "runtime/train/TrainLoop.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace weft::runtime {

/// A job's settings; errors name them by weft-run's flags.
struct JobOptions {
  /// The bundle directory (runJob only).
  std::string bundle;
  /// The training data: a flat token file of `tokenBytes`-wide ids (2 or
  /// 4), or text, one token per byte, with `tokenizer` "bytes".
  std::string data;
  std::string tokenizer;
  int tokenBytes = 2;
  int64_t steps = 100;
  /// Peak learning rate, linear warm-up steps (negative: steps / 10) and
  /// the cosine decay's floor as a fraction of `lr`.
  double lr = 1e-3;
  int64_t warmup = -1;
  double minLrRatio = 0.1;
  /// Seeds the initialisation, the batch order and sampling.
  uint64_t seed = 0;
  /// Safetensors files to start from and to save to (empty: none).
  std::string initFrom, save;
  /// Sharded checkpoints of the whole training state
  /// (runtime/checkpoint/Checkpoint.h): written to `checkpointDir` every
  /// `checkpointEvery` steps (0: only after the last), the newest `keep`
  /// kept; `resume` continues from the newest good one under it, `steps`
  /// counting from the first step of the run it continues.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  /// --checkpoint-every auto: Young's interval for a mean time to failure
  /// of `mttfHours`, from the first save's cost (checkpointInterval).
  bool checkpointAuto = false;
  double mttfHours = 24;
  int64_t keep = 2;
  std::string resume;
  /// --sdc-check every=N: compare dp replicas' tensors every N steps
  /// (0: never; runtime/train/ReplicaCheck.h).
  int64_t sdcEvery = 0;
  /// --sdc-check every=N,replay: those steps run twice (Replay.h).
  bool sdcReplay = false;
  /// --check-finite: stop at the first instruction that makes (or reads
  /// from a parameter) a NaN or infinity, naming it (the CPU only).
  bool checkFinite = false;
  /// --loss-spike F[:warn|skip|stop] (factor 0: off).
  LossSpikePolicy lossSpike;
  /// --grad-spike F: warn when the gradient norm exceeds F times the mean
  /// of the last 100 steps' (0: off).
  double gradSpike = 0;
  /// --stall-seconds T: a step that makes no progress for T seconds is
  /// reported by every rank with the instruction it is in (0: off).
  double stallSeconds = 0;
  /// WEFT_INJECT's faults, for tests ("": none;
  /// runtime/train/FaultInjection.h), and which attempt of a job
  /// --max-restarts restarts this is (WEFT_ATTEMPT, from 0).
  std::string inject;
  int64_t attempt = 0;
  /// Appends one JSON line per step here (empty: none).
  std::string metrics;
  /// --trace: a Chrome trace of each rank's steps here (runtime/train/
  /// Trace.h; "": none), of the steps --profile-steps A:B names ("": all).
  std::string trace, profileSteps;
  /// --peak-tflops: each rank's dense peak for MFU (0: the bundle's meta
  /// peak_flops_per_rank, from weftc compile --topology, else no MFU).
  double peakTflops = 0;
  /// Held-out data (--eval-data: sources as --data's, without weights, read
  /// with its tokenizer) whose loss the forward program measures every
  /// `evalEvery` steps (0: only after the last) over its first
  /// `evalBatches` batches in file order (0: every whole batch), the batch
  /// being a micro-batch of the job's rows (TrainLoop::evaluate).
  std::string evalData;
  int64_t evalEvery = 0, evalBatches = 0;
  /// Tokens to generate after training, and their temperature.
  int64_t sample = 0;
  double temperature = 0.8;
  /// "cpu" or "cuda" (GPU 0); with cuda, whether to replay CUDA graphs
  /// (unset: the executor's default).
  std::string device = "cpu";
  std::optional<bool> cudaGraphs;
  /// Seconds a rank waits for the others: the rendezvous, each collective.
  double timeoutSeconds = 120;
};

struct JobResult {
  int64_t steps = 0;
  /// Rank 0: the one that prints, writes metrics and saves.
  bool leader = true;
  /// With `evalData`: the last evaluation (after the last step).
  std::optional<EvalReport> eval;
  /// With `sample`: the prompt (a window from a third of the way into the
  /// data) and the tokens generated after it.
  std::vector<uint32_t> prompt, generated;
  /// The ids are bytes (--tokenizer bytes, or datasets weft-data made with
  /// the byte tokenizer): the sample prints as text.
  bool textSample = false;
};

/// Whether the job's settings are in range (a positive finite --lr, a
/// --min-lr-ratio in [0, 1], ...); errors name the flag and the value.
absl::Status checkJobOptions(const JobOptions &options);

/// --data (and --tokenizer, --token-bytes) opened as training windows of
/// `seq` tokens for a model of vocabulary `vocab` (runtime/data/Dataset.h):
/// a comma-separated list of sources, each a dataset index, one flat token
/// file or text, with an optional ":WEIGHT" (default 1) in the mixture.
absl::StatusOr<DataMixture> openTrainingData(const JobOptions &options,
                                             int64_t seq, int64_t vocab);

/// --eval-data's sources, each opened as windows of `seq` tokens for a
/// model of vocabulary `vocab`, in the order given; a weight is an error
/// (a held-out set is read whole, once).
absl::StatusOr<std::vector<ShuffledWindows>>
openHeldOutData(const JobOptions &options, int64_t seq, int64_t vocab);

/// What every rank of the job must agree on at rendezvous: the bundle's
/// hash and the flags that change the step (see Communicator::create).
JobFacts jobFacts(const JobOptions &options, const sched::SchedBundle &bundle);

/// Whether bundle `dir` can run as a job of `worldSize` ranks: it loads and
/// validates, and its mesh has that many ranks (a one-rank bundle on one).
/// The launcher asks before it starts any rank; every rank asks again.
absl::Status checkJobBundle(const std::string &dir, int64_t worldSize);

/// A bundle for a smaller mesh that `weftc compile --elastic MIN` wrote
/// inside another (its manifest's meta "elastic" lists them): the same
/// model and global batch on `dp` data-parallel replicas, `ranks` ranks.
struct ElasticBundle {
  std::string dir;
  int64_t dp = 0, ranks = 0;
};

/// The data-parallel size of bundle `dir`'s mesh (1 without a dp axis).
absl::StatusOr<int64_t> dataParallelSize(const std::string &dir);

/// For `weft-run --elastic MIN`: of bundle `dir`'s elastic bundles, the one
/// with the most replicas below `belowDp` and at least `minDp`, loaded and
/// checked. Errors say why there is none (no table: compiled without
/// --elastic; none in range) or what is wrong with the table.
absl::StatusOr<ElasticBundle> smallerBundle(const std::string &dir,
                                            int64_t belowDp, int64_t minDp);

/// The whole job on rank `rank` of the job (see rankFromEnvironment);
/// progress and what it saved go to `log`.
absl::StatusOr<JobResult> runJob(const JobOptions &options,
                                 const RankInfo &rank, const Log &log);

/// The training half on an executor already made and initialised;
/// `comm` (the executor's) is required when the job has several ranks.
absl::StatusOr<JobResult> trainJob(SchedExecutor &executor, Communicator *comm,
                                   const JobOptions &options, const Log &log);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_JOB_H

//===- Checkpoint.h - sharded training checkpoints --------------*- C++ -*-===//
//
// The whole training state a step leaves: every parameter and every state
// tensor (AdamW's moments, the step and dropout counters, FP8 amax
// histories, the loss scale) but the transient ones (gradient
// accumulators, micro-batch counters: zero between steps), each rank
// writing the blocks it holds (a pipeline stage's tensors only on its
// stage's ranks), plus the step count, which fixes the rest (the batch
// sampler and the learning-rate schedule are functions of the step). A
// checkpoint is a directory `<dir>/step-<N>`:
//
//   rank-<r>.safetensors  rank r's blocks, as stored (its dtype), under the
//                         parameters' names;
//   rank-<r>.json         each of them: xxHash64 of its bytes, its block's
//                         shape, the global shape and where the block
//                         starts, and how a consolidated checkpoint holds
//                         the tensor (kept rows, shape, stacked slices;
//                         whether it is optimizer state);
//   index.json            written last by rank 0: the format, the step, the
//                         bundle's manifest hash, the rank count and the
//                         run's facts resume must see again (the seed the
//                         batch order comes from, the data).
//
// It is written as `step-<N>.tmp` (each file fsynced) and renamed once the
// index is in, so a directory named `step-<N>` is complete; a crash leaves
// only a `.tmp` that resume ignores. Resume takes the newest checkpoint
// every rank can read and verify (byte counts, shapes, checksums), saying
// why it passed over newer ones. Under the plan it was saved with (the same
// bundle and ranks) each rank reads its own file, bit for bit; under
// another plan (another mesh, ZeRO stage, tp or pp split; the same model,
// global batch and run facts) each rank assembles every tensor it holds
// from the saved blocks that overlap it, in global coordinates: resharding
// as PyTorch DCP does it at load time. Each rank then reads every saving
// rank's file, so resharding costs a rank the whole checkpoint's bytes in
// memory, which suits the CPU scale it is tested at.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define WEFT_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/checkpoint/CheckpointIndex.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/support/Log.h"

#include "absl/status/statusor.h"

#include <map>
#include <memory>
#include <string>
#include <thread>

namespace weft::runtime {

/// Writes checkpoints under `dir`, the newest `keep` kept, one in flight.
/// save() snapshots this rank's blocks to host memory (the step's stall)
/// and, with `async`, leaves the files to a background thread; the next
/// save() and finish() wait for it and return its error, if any. Rank 0's
/// thread completes the checkpoint (index.json, the rename) once every
/// rank's `rank-<r>.done` is there (a shared filesystem), waiting at most
/// `timeoutSeconds`.
class CheckpointWriter {
public:
  CheckpointWriter(std::string dir, int64_t keep, RunFacts facts,
                   double timeoutSeconds);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter &) = delete;
  CheckpointWriter &operator=(const CheckpointWriter &) = delete;

  /// The state of `ex` after `step` steps, to `dir`/step-<step>. A
  /// collective: every rank of `comm` (null: one rank) calls it after the
  /// same step.
  absl::Status save(SchedExecutor &ex, Communicator *comm, int64_t step,
                    bool async, const Log &log);
  /// Waits for the save in flight; rank 0 says where it saved.
  absl::Status finish(const Log &log);
  /// Seconds the last finished save took in all: the snapshot and the
  /// files (0 before one finished).
  double lastSaveSeconds() const { return lastSeconds; }

  struct Snapshot;

private:
  absl::Status commit(const std::string &tmp, const std::string &final,
                      int64_t step, int64_t ranks);
  std::string dir;
  int64_t keep;
  RunFacts facts;
  double timeoutSeconds;
  std::string bundleHash; // The saved executor's bundle's manifest hash.
  /// The save's copy of this rank's tensors as raw bytes, its buffers kept
  /// for the next save: the step waits for one copy, with no allocation
  /// and no widening (BENCHMARKS.md: 0.8% of the benchmark step, 2.9% when
  /// each save decoded into new f32 vectors).
  std::unique_ptr<Snapshot> snap;
  std::thread inFlight;
  absl::Status result;
  std::string saved; // Rank 0: the checkpoint the thread completed.
  double snapshotSeconds = 0, writeSeconds = 0, lastSeconds = 0;
};

/// Young's interval between checkpoints, sqrt(2 C M) for a save costing
/// `saveSeconds` (C) and a mean time to failure of `mttfSeconds` (M), as a
/// number of steps of `stepSeconds` (at least 1): the interval that loses
/// the least expected time to saving and to recomputing after a failure.
int64_t checkpointInterval(double saveSeconds, double stepSeconds,
                           double mttfSeconds);

/// Whether `dir` holds a complete checkpoint (a step-<N> with its index).
bool hasCheckpoint(const std::string &dir);

/// Loads the newest checkpoint under `dir` that every rank verifies into
/// `ex` and returns its step; errors name the file, the tensor and what is
/// wrong when none can be used. A collective, as CheckpointWriter::save.
absl::StatusOr<int64_t> resumeCheckpoint(SchedExecutor &ex, Communicator *comm,
                                         const std::string &dir,
                                         const RunFacts &facts, const Log &log);

/// The model's parameters (no optimizer state) in the checkpoint at
/// `dir` (a step-<N> directory, or the newest complete one under a
/// checkpoint directory), each assembled whole from the ranks' blocks, every
/// block's checksum verified, and held as a Hugging Face file holds it
/// (the kept rows, the checkpoint shape, stacked slices under their own
/// names), f32; `from` says which checkpoint. No bundle needed: the rank
/// tables say it all (`weftc export`).
absl::StatusOr<std::vector<TensorToWrite>>
consolidateCheckpoint(const std::string &dir, std::string &from);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_CHECKPOINT_CHECKPOINT_H

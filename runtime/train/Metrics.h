//===- Metrics.h - what a training job reports per step ---------*- C++ -*-===//
//
// A job's progress (a bar on a terminal, a line every 5% otherwise), its
// metrics file (one JSON line per step) and the peak resident memory of
// every rank that goes into it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_METRICS_H
#define WEFT_RUNTIME_TRAIN_METRICS_H

#include "runtime/train/TrainLoop.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

class Communicator;

/// This process's peak resident memory in bytes.
double peakRssBytes();

/// Every rank's peak resident memory in bytes (kibibyte-rounded), in rank
/// order: gathered from all ranks through `comm` (a collective every rank
/// must run), or this process's alone without one.
absl::StatusOr<std::vector<int64_t>> peakMemoryOfRanks(Communicator *comm);

/// What to write after step `report` of `total`: on a terminal (`tty`) the
/// redrawn bar, ended at the last step; otherwise a line at the first
/// step, the last, and every 5% between, and nothing at the others.
std::string progressText(const StepReport &report, int64_t total, bool tty);

/// The metrics file's JSON object for one step (no newline): step, loss,
/// grad_norm, lr, tokens_per_s, step_s, ranks and peak_memory_bytes; with
/// loss scaling also loss_scale and skipped; with the step's FLOPs
/// tflops (the model's TFLOP/s per rank) and, given each rank's dense peak
/// `peakFlops` (FLOP/s; 0: unknown), mfu and hfu; with health probes,
/// probes (an object of each metric's value).
std::string metricsLine(const StepReport &report, int64_t ranks,
                        const std::vector<int64_t> &peakMemoryBytes,
                        double peakFlops = 0);

/// A held-out evaluation as a line of text ("eval after step N: loss L over
/// T tokens (B batches)") and as the metrics file's JSON object (step,
/// eval_loss, eval_tokens, eval_s; no newline).
std::string evalText(const EvalReport &report);
std::string evalLine(const EvalReport &report);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_METRICS_H

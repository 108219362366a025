//===- Trace.h - a Chrome trace of a rank's steps ---------------*- C++ -*-===//
//
// `weft-run --trace out.json [--profile-steps A:B]` writes what each rank
// did, as the Chrome trace event format Perfetto and chrome://tracing open:
// one process per rank, one track per stream of the programs (each
// instruction a complete event: a GEMM, a generated kernel by name, a
// collective, a send or receive, with its program, index and layer), and
// tracks for the steps, the wait for data and checkpoint snapshots. Rank r
// of several writes out.rank<r>.json (rank 0 out.json). Instructions are
// timed on the host as they run, so on the CPU only (a GPU's would be the
// time to queue them).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_TRAIN_TRACE_H
#define WEFT_RUNTIME_TRAIN_TRACE_H

#include "runtime/exec/SchedExecutor.h"

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>

namespace weft::runtime {

/// `--profile-steps`' value: "" (every step) or "A:B" (steps A to B,
/// from 1), as {first, last} (last -1: no end).
absl::StatusOr<std::pair<int64_t, int64_t>>
parseProfileSteps(const std::string &text);

class Trace {
public:
  using Clock = std::chrono::steady_clock;
  /// Rank `rank` of `ranks`, steps [first, last] (last -1: all).
  Trace(const std::string &path, int64_t rank, int64_t ranks, int64_t first,
        int64_t last);

  /// Whether step `step` is traced; turns the instruction events on or off.
  bool startStep(int64_t step);
  bool active() const { return on; }
  /// A complete event on `track` (named by it; one track each).
  void span(const std::string &track, const std::string &name,
            const std::string &category, Clock::time_point start,
            Clock::time_point end, nlohmann::json args = nullptr);
  /// The executor's hook: each instruction on its stream's track.
  SchedExecutor::InstructionHook instructionHook();
  /// Writes the file (its path said by path()).
  absl::Status write() const;
  const std::string &path() const { return file; }

private:
  int track(const std::string &name);
  std::string file;
  int64_t rank, first, last;
  bool on = false;
  Clock::time_point origin = Clock::now();
  std::map<std::string, int> tracks;
  nlohmann::json events = nlohmann::json::array();
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_TRAIN_TRACE_H

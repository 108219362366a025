//===- weft-run.cpp - train a compiled bundle -----------------------------===//
//
//   weft-run [--nproc N] bundle/ --data FILE [--tokenizer bytes |
//            --token-bytes 2|4] --steps N [--lr X] [--warmup N] [--seed S]
//            [--init-from W.safetensors] [--save W.safetensors]
//            [--metrics out.jsonl] [--eval-data FILE [--eval-every N]]
//            [--sample N] [--timeout S]
//            [--device cpu|cuda] [--checkpoint-dir D ...]
//            [--max-restarts K [--elastic MIN]]
//
// Links the runtime only (no MLIR): this is what runs on a cluster node.
// A bundle placed on several ranks runs as one process per rank: --nproc N
// starts N local ranks like torchrun; a process started by torchrun, mpirun
// or a scheduler reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT instead. Rank 0 prints, writes metrics and saves.
//
// Only the command line lives here: its flags are RunFlags, the launcher
// runtime/dist/Launcher, the training job runtime/train/Job.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/data/TokenFile.h"
#include "runtime/dist/Launcher.h"
#include "runtime/exec/Blas.h"
#include "runtime/train/Job.h"

#include "tools/weft-run/RunFlags.h"

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

namespace {
/// What the environment adds to rank `rank`'s job: whether to replay CUDA
/// graphs, and the test hooks.
void addEnvironment(weft::runtime::JobOptions &options, int64_t rank) {
  if (const char *graphs = std::getenv("WEFT_CUDA_GRAPHS"))
    options.cudaGraphs = std::string(graphs) != "0";
  // Fault injection for tests (runtime/train/FaultInjection.h), and which
  // attempt of a restarted job this is (the launcher sets WEFT_ATTEMPT).
  if (const char *fault = std::getenv("WEFT_INJECT"))
    options.inject = fault;
  if (const char *attempt = std::getenv("WEFT_ATTEMPT"))
    options.attempt = std::atol(attempt);
}

/// Rank 0's sample: decoded text when the data is bytes, else token ids.
void printSample(const weft::runtime::JobResult &result) {
  if (result.textSample) {
    std::cout << "--- sample ---\n"
              << weft::runtime::decodeByteTokens(result.prompt) << "|"
              << weft::runtime::decodeByteTokens(result.generated) << "\n";
  } else {
    for (uint32_t t : result.generated)
      std::cout << t << " ";
    std::cout << "\n";
  }
}
} // namespace

int main(int argc, char **argv) {
  // Before anything else: OpenBLAS's kernels for this CPU (may start the
  // program again with OPENBLAS_CORETYPE set; see runtime/exec/Blas.h).
  weft::runtime::ensureOpenBlasKernels(argv);
  // A rank that writes to a peer that has died must hear EPIPE and say
  // which peer is gone, not be killed by SIGPIPE in silence (Gloo's TCP
  // writes do not pass MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  absl::SetProgramUsageMessage("train a compiled Weft bundle on CPUs or a "
                               "GPU\n\n"
                               "  weft-run [--nproc N] bundle/ --data FILE "
                               "[--tokenizer "
                               "bytes | --token-bytes 2|4] --steps N\n"
                               "           [--lr X] [--seed S] [--init-from "
                               "W.safetensors] [--save W.safetensors]\n"
                               "           [--metrics out.jsonl] [--eval-data "
                               "FILE] [--sample N] [--device cpu|cuda]");
  // --help lists the flags RunFlags.cpp defines (abseil's default is those
  // of the file named after the program), named from the repository root.
  absl::FlagsUsageConfig usageConfig;
  usageConfig.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "tools/weft-run/RunFlags.cpp");
  };
  usageConfig.contains_helpshort_flags = usageConfig.contains_help_flags;
  usageConfig.contains_helppackage_flags = usageConfig.contains_help_flags;
  usageConfig.normalize_filename = [](absl::string_view file) {
    size_t tools = file.rfind("tools/weft-run/");
    return std::string(tools == absl::string_view::npos ? file
                                                        : file.substr(tools));
  };
  absl::SetFlagsUsageConfig(usageConfig);
  weft::runtime::Log log("weft-run");
  auto fail = [&log](absl::string_view message) {
    log.error(message);
    return 1;
  };
  auto command = weft::run::parseRunFlags({argv, argv + argc});
  if (!command.ok()) {
    // A flag abseil cannot read is reported in its words, as
    // absl::ParseCommandLine did.
    if (weft::run::isFlagSyntaxError(command.status())) {
      std::cerr << "ERROR: " << command.status().message() << "\n";
      return 1;
    }
    return fail(command.status().message());
  }
  if (!command->usage.empty()) {
    // Abseil prints the usage asked for and exits.
    std::vector<char *> usage = {argv[0]};
    for (std::string &flag : command->usage)
      usage.push_back(flag.data());
    absl::ParseCommandLine(static_cast<int>(usage.size()), usage.data());
    return 1;
  }
  int nproc = command->nproc;
  auto launch = weft::runtime::shouldLaunch(nproc);
  if (!launch.ok())
    return fail(launch.status().message());
  if (*launch) {
    // The bundle must be fit for this many ranks before any starts.
    if (absl::Status s =
            weft::runtime::checkJobBundle(command->job.bundle, nproc);
        !s.ok())
      return fail(s.message());
    weft::runtime::LaunchOptions ranks;
    ranks.nproc = nproc;
    ranks.argv.assign(argv, argv + argc);
    ranks.stopGraceSeconds = command->stopGraceSeconds;
    // A failed rank stops the job; with --max-restarts it starts again
    // (fresh ranks, a fresh rendezvous) from the newest checkpoint, a
    // bounded number of times, never in an endless loop. A rank whose
    // device is lost cannot come back: with --elastic the job goes on with
    // fewer data-parallel replicas (a smaller bundle), resharding the
    // checkpoint and keeping the global batch.
    const std::string &checkpoints = command->job.checkpointDir;
    std::string bundle = command->job.bundle;
    int64_t dp = 0;
    if (command->elastic > 0) {
      absl::StatusOr<int64_t> size =
          weft::runtime::dataParallelSize(command->job.bundle);
      if (!size.ok())
        return fail(size.status().message());
      dp = *size;
      // The smaller bundles must be there before anything is lost.
      if (absl::StatusOr<weft::runtime::ElasticBundle> next =
              weft::runtime::smallerBundle(command->job.bundle, dp,
                                           command->elastic);
          !next.ok())
        return fail(absl::StrCat("--elastic ", command->elastic, ": ",
                                 next.status().message()));
    }
    for (int64_t restart = 0;; ++restart) {
      ::setenv("WEFT_ATTEMPT", std::to_string(restart).c_str(), 1);
      absl::Status ran = weft::runtime::launchRanks(ranks, log);
      if (ran.ok())
        return 0;
      auto giveUp = [&](absl::string_view why) {
        log.error(absl::StrCat("gave up after ", restart, " restart",
                               restart == 1 ? "" : "s", ": ", why));
        return 1;
      };
      if (absl::IsCancelled(ran) || restart >= command->maxRestarts) {
        if (command->maxRestarts > 0)
          return giveUp(ran.message());
        return 1;
      }
      std::string smaller;
      if (absl::IsUnavailable(ran)) {
        if (command->elastic == 0)
          return giveUp(absl::StrCat(
              ran.message(),
              "; the job cannot start again on as many ranks (weft-run "
              "--elastic MIN would go on with fewer data-parallel "
              "replicas)"));
        absl::StatusOr<weft::runtime::ElasticBundle> next =
            weft::runtime::smallerBundle(command->job.bundle, dp,
                                         command->elastic);
        if (!next.ok())
          return giveUp(
              absl::StrCat(ran.message(), "; ", next.status().message()));
        bundle = next->dir;
        dp = next->dp;
        ranks.nproc = static_cast<int>(next->ranks);
        smaller = absl::StrCat(" on dp=", dp, " (", next->ranks, " ranks, ",
                               bundle, ")");
      }
      bool resumable = weft::runtime::hasCheckpoint(checkpoints);
      log.say(absl::StrCat(log.program(), ": restarting the job (", restart + 1,
                           " of ", command->maxRestarts, ")", smaller, " ",
                           resumable
                               ? "from the newest checkpoint in " + checkpoints
                               : std::string("from the start (no "
                                             "checkpoint yet)")));
      ranks.argv.assign(argv, argv + argc);
      ranks.argv[command->bundleArg] = bundle;
      if (resumable && command->job.resume.empty()) {
        ranks.argv.push_back("--resume");
        ranks.argv.push_back(checkpoints);
      }
    }
  }

  auto rank = weft::runtime::rankFromEnvironment();
  if (!rank.ok())
    return fail(rank.status().message());
  log = log.forRank(rank->rank, rank->worldSize);
  weft::runtime::JobOptions options = command->job;
  addEnvironment(options, rank->rank);
  // torchrun restarts a failed job itself (its --max-restarts), running the
  // same command line again: from the second attempt on, the job continues
  // from the newest checkpoint, as weft-run's own launcher makes it.
  if (!std::getenv(weft::runtime::kLaunchedVar) && rank->restartCount > 0) {
    options.attempt = rank->restartCount;
    if (options.resume.empty() &&
        weft::runtime::hasCheckpoint(options.checkpointDir)) {
      options.resume = options.checkpointDir;
      if (rank->rank == 0)
        log.say(absl::StrCat(log.program(), ": attempt ", rank->restartCount,
                             " of a job torchrun restarted: resuming from ",
                             options.checkpointDir));
    }
  }
  auto result = weft::runtime::runJob(options, *rank, log);
  if (!result.ok())
    return fail(result.status().message());
  // Every rank took part in making the sample; rank 0 prints it.
  if (options.sample > 0 && result->leader)
    printSample(*result);
  return 0;
}

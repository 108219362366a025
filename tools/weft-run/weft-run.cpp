//===- weft-run.cpp - train a compiled bundle -----------------------------===//
//
//   weft-run [--nproc N] bundle/ --data FILE [--tokenizer bytes |
//            --token-bytes 2|4] --steps N [--lr X] [--warmup N] [--seed S]
//            [--init-from W.safetensors] [--save W.safetensors]
//            [--metrics out.jsonl] [--sample N] [--timeout S]
//            [--device cpu|cuda]
//
// Links the runtime only (no MLIR): this is what runs on a cluster node.
// A bundle placed on several ranks runs as one process per rank: --nproc N
// starts N local ranks like torchrun; a process started by torchrun, mpirun
// or a scheduler reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT instead. Rank 0 prints, writes metrics and saves.
//
// Only the command line lives here: the launcher is runtime/dist/Launcher,
// the training job runtime/train/Job.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenFile.h"
#include "runtime/dist/Launcher.h"
#include "runtime/exec/Blas.h"
#include "runtime/train/Job.h"

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

ABSL_FLAG(std::string, data, "",
          "Training data: a token file or, with --tokenizer bytes, text");
ABSL_FLAG(std::string, tokenizer, "",
          "'bytes' reads --data as text, one token per byte");
ABSL_FLAG(int, token_bytes, 2,
          "Width of a token id in a flat token file: 2 or 4");
ABSL_FLAG(int64_t, steps, 100, "Training steps to run");
ABSL_FLAG(double, lr, 1e-3, "Peak learning rate");
ABSL_FLAG(int64_t, warmup, -1, "Linear warm-up steps (default: steps / 10)");
ABSL_FLAG(double, min_lr_ratio, 0.1,
          "Cosine decay floor as a fraction of --lr");
ABSL_FLAG(uint64_t, seed, 0, "Seed of the initialisation and the batch order");
ABSL_FLAG(std::string, init_from, "", "Start from these weights (safetensors)");
ABSL_FLAG(std::string, save, "",
          "Write the trained weights here (safetensors, "
          "Hugging Face names)");
ABSL_FLAG(std::string, metrics, "",
          "Append one JSON line per step to this file");
ABSL_FLAG(int64_t, sample, 0,
          "After training, print this many generated tokens");
ABSL_FLAG(double, temperature, 0.8, "Sampling temperature (0 = greedy)");
ABSL_FLAG(
    int, nproc, 1,
    "Start this many local ranks (the bundle's mesh size), like torchrun");
ABSL_FLAG(std::string, device, "cpu",
          "Where the programs run: cpu, or cuda (GPU 0; the bundle must be "
          "compiled with weftc compile --target cuda)");
ABSL_FLAG(double, timeout, 120,
          "Seconds a rank waits for the others (rendezvous, each collective) "
          "before it gives up with an error");
ABSL_FLAG(double, stop_grace, 10,
          "With --nproc: seconds a rank has to end after the launcher stops "
          "it (SIGTERM) before it is killed (SIGKILL)");

namespace {
/// The job the flags describe, for rank `rank`.
weft::runtime::JobOptions jobFromFlags(const std::string &bundle,
                                       int64_t rank) {
  weft::runtime::JobOptions options;
  options.bundle = bundle;
  options.data = absl::GetFlag(FLAGS_data);
  options.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  options.tokenBytes = absl::GetFlag(FLAGS_token_bytes);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.lr = absl::GetFlag(FLAGS_lr);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.minLrRatio = absl::GetFlag(FLAGS_min_lr_ratio);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.initFrom = absl::GetFlag(FLAGS_init_from);
  options.save = absl::GetFlag(FLAGS_save);
  options.metrics = absl::GetFlag(FLAGS_metrics);
  options.sample = absl::GetFlag(FLAGS_sample);
  options.temperature = absl::GetFlag(FLAGS_temperature);
  options.device = absl::GetFlag(FLAGS_device);
  options.timeoutSeconds = absl::GetFlag(FLAGS_timeout);
  if (const char *graphs = std::getenv("WEFT_CUDA_GRAPHS"))
    options.cudaGraphs = std::string(graphs) != "0";
  // Test hooks: WEFT_TEST_EXIT=R:S makes rank R die before step S, and
  // WEFT_TEST_STOP=R:S stop itself (SIGSTOP) there, so tests can check that
  // the other ranks report it and the job ends instead of hanging.
  int64_t dieRank = -1, dieStep = -1, stopRank = -1, stopStep = -1;
  if (const char *die = std::getenv("WEFT_TEST_EXIT"))
    std::sscanf(die, "%ld:%ld", &dieRank, &dieStep);
  if (const char *stop = std::getenv("WEFT_TEST_STOP"))
    std::sscanf(stop, "%ld:%ld", &stopRank, &stopStep);
  if (dieRank == rank || stopRank == rank)
    options.beforeStep = [=](int64_t step) {
      if (dieRank == rank && step == dieStep)
        ::_exit(3);
      if (stopRank == rank && step == stopStep)
        ::raise(SIGSTOP);
    };
  return options;
}

/// Rank 0's sample: decoded text with --tokenizer bytes, else token ids.
void printSample(const weft::runtime::JobOptions &options,
                 const weft::runtime::JobResult &result) {
  if (options.tokenizer == "bytes") {
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
  absl::SetProgramUsageMessage("train a compiled Weft bundle on CPUs or a "
                               "GPU\n\n"
                               "  weft-run [--nproc N] bundle/ --data FILE "
                               "[--tokenizer "
                               "bytes | --token-bytes 2|4] --steps N\n"
                               "           [--lr X] [--seed S] [--init-from "
                               "W.safetensors] [--save W.safetensors]\n"
                               "           [--metrics out.jsonl] [--sample N] "
                               "[--device cpu|cuda]");
  weft::runtime::Log log("weft-run");
  auto fail = [&log](absl::string_view message) {
    log.error(message);
    return 1;
  };
  // Flags are spelled with dashes (--init-from) like the other tools;
  // Abseil's names use underscores, so translate the name part.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char *> translated;
  for (std::string &arg : args) {
    if (arg.rfind("--", 0) == 0)
      std::replace(arg.begin() + 2, std::find(arg.begin(), arg.end(), '='), '-',
                   '_');
    translated.push_back(arg.data());
  }
  std::vector<char *> positional = absl::ParseCommandLine(
      static_cast<int>(translated.size()), translated.data());
  if (positional.size() != 2)
    return fail("expected exactly one bundle directory (see --help)");
  // Checked whether or not this process launches (a rank ignores it, but
  // a value that cannot mean anything is a mistake either way).
  if (!(absl::GetFlag(FLAGS_stop_grace) >= 0))
    return fail("--stop-grace must be at least 0 seconds");
  int nproc = absl::GetFlag(FLAGS_nproc);
  auto launch = weft::runtime::shouldLaunch(nproc);
  if (!launch.ok())
    return fail(launch.status().message());
  if (*launch) {
    // The bundle must be fit for this many ranks before any starts.
    if (absl::Status s = weft::runtime::checkJobBundle(positional[1], nproc);
        !s.ok())
      return fail(s.message());
    weft::runtime::LaunchOptions ranks;
    ranks.nproc = nproc;
    ranks.argv.assign(argv, argv + argc);
    ranks.stopGraceSeconds = absl::GetFlag(FLAGS_stop_grace);
    return weft::runtime::launchRanks(ranks, log).ok() ? 0 : 1;
  }

  auto rank = weft::runtime::rankFromEnvironment();
  if (!rank.ok())
    return fail(rank.status().message());
  log = log.forRank(rank->rank, rank->worldSize);
  weft::runtime::JobOptions options = jobFromFlags(positional[1], rank->rank);
  auto result = weft::runtime::runJob(options, *rank, log);
  if (!result.ok())
    return fail(result.status().message());
  // Every rank took part in making the sample; rank 0 prints it.
  if (options.sample > 0 && result->leader)
    printSample(options, *result);
  return 0;
}

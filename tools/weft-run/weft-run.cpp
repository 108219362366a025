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
//===----------------------------------------------------------------------===//

#include "runtime/data/Batches.h"
#include "runtime/data/TokenFile.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/train/TrainLoop.h"

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
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

namespace {
int64_t gRank = 0; // For messages: which rank says it.
int64_t gWorld = 1;

/// Writes one whole line to stderr with one write(2), so the lines of ranks
/// sharing a terminal never interleave mid-line.
void say(const std::string &line) {
  std::string text = line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

int fail(const std::string &message) {
  say("weft-run: error: " +
      (gWorld > 1 ? "rank " + std::to_string(gRank) + ": " : "") + message);
  return 1;
}
int fail(const absl::Status &status) {
  return fail(std::string(status.message()));
}

/// A TCP port nobody listens on now (for the rendezvous store).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&addr), len) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0)
    ::close(fd);
  return port;
}

/// --nproc N: runs this same command as N rank processes and waits. The
/// first rank to fail is named, and the others are stopped, so a dead rank
/// never leaves the job hanging.
int launch(int nproc, char **argv) {
  std::string port = std::getenv("MASTER_PORT") ? std::getenv("MASTER_PORT")
                                                : std::to_string(freePort());
  std::vector<pid_t> pids;
  pid_t launcher = ::getpid();
  // SIGINT and SIGTERM to the launcher stop every rank: the handler only
  // records the signal; the wait loop below forwards it.
  static volatile sig_atomic_t stopSignal = 0;
  struct sigaction stop = {};
  stop.sa_handler = [](int signal) { stopSignal = signal; };
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = ::fork();
    if (pid < 0)
      return fail("cannot start rank " + std::to_string(r));
    if (pid == 0) {
      // A rank never outlives its launcher (killed by a scheduler, say).
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != launcher)
        ::_exit(1);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 0);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::execv("/proc/self/exe", argv);
      std::perror("weft-run: exec");
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  int remaining = nproc, result = 0;
  bool forwarded = false;
  while (remaining > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) {
      if (stopSignal && !forwarded) {
        say("weft-run: stopping " + std::to_string(remaining) + " ranks");
        for (pid_t rank : pids)
          ::kill(rank, SIGTERM);
        forwarded = true;
        result = 1;
      }
      continue;
    }
    if (pid < 0)
      break;
    --remaining;
    int rank = static_cast<int>(std::find(pids.begin(), pids.end(), pid) -
                                pids.begin());
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || result != 0)
      continue;
    result = 1;
    std::string how =
        WIFSIGNALED(status)
            ? "was killed by signal " + std::to_string(WTERMSIG(status))
            : "exited with status " + std::to_string(WEXITSTATUS(status));
    say("weft-run: error: rank " + std::to_string(rank) + " (pid " +
        std::to_string(pid) + ") " + how + "; stopping the other ranks");
    // Let the survivors report the failure themselves first (their
    // collectives fail at once on a closed connection), then stop them.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (pid_t other : pids)
      if (other != pid)
        ::kill(other, SIGTERM);
  }
  return result;
}

/// This process's peak resident memory in bytes.
double peakRssBytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

void progress(const weft::runtime::StepReport &r, int64_t total, bool tty) {
  double tps = r.tokens / r.seconds;
  if (tty) {
    int width = 30, done = static_cast<int>(width * r.step / total);
    std::fprintf(stderr, "\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0f tok/s",
                 std::string(done, '#').c_str(),
                 std::string(width - done, '.').c_str(),
                 static_cast<long long>(r.step), static_cast<long long>(total),
                 r.loss, r.lr, tps);
    if (r.step == total)
      std::fprintf(stderr, "\n");
  } else if (r.step == 1 || r.step == total ||
             r.step % std::max<int64_t>(1, total / 20) == 0) {
    std::fprintf(stderr,
                 "step %lld/%lld loss %.4f grad_norm %.3f lr %.2e %.0f tok/s\n",
                 static_cast<long long>(r.step), static_cast<long long>(total),
                 r.loss, r.gradNorm, r.lr, tps);
  }
}
} // namespace

int main(int argc, char **argv) {
  absl::SetProgramUsageMessage("train a compiled Weft bundle on CPUs or a "
                               "GPU\n\n"
                               "  weft-run [--nproc N] bundle/ --data FILE "
                               "[--tokenizer "
                               "bytes | --token-bytes 2|4] --steps N\n"
                               "           [--lr X] [--seed S] [--init-from "
                               "W.safetensors] [--save W.safetensors]\n"
                               "           [--metrics out.jsonl] [--sample N] "
                               "[--device cpu|cuda]");
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
  int nproc = absl::GetFlag(FLAGS_nproc);
  if (nproc < 1)
    return fail("--nproc must be at least 1");
  if (nproc > 1 && !std::getenv("RANK"))
    return launch(nproc, argv);

  auto rankInfo = weft::runtime::rankFromEnvironment();
  if (!rankInfo.ok())
    return fail(rankInfo.status());
  gRank = rankInfo->rank;
  gWorld = rankInfo->worldSize;
  double timeoutSeconds = absl::GetFlag(FLAGS_timeout);
  if (!(timeoutSeconds > 0))
    return fail("--timeout must be positive");
  std::unique_ptr<weft::runtime::Communicator> comm;
  if (rankInfo->worldSize > 1) {
    auto joined = weft::runtime::Communicator::create(
        *rankInfo,
        std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
    if (!joined.ok())
      return fail(joined.status());
    comm = std::move(*joined);
  }
  bool leader = rankInfo->rank == 0;

  auto bundle = weft::runtime::Bundle::load(positional[1]);
  if (!bundle.ok())
    return fail(bundle.status());
  if (absl::Status s = weft::runtime::TrainLoop::check(*bundle); !s.ok())
    return fail(s);
  if (bundle->mesh.size() != rankInfo->worldSize && bundle->mesh.size() == 1)
    return fail(positional[1] +
                std::string(": the bundle runs on one rank but this job has ") +
                std::to_string(rankInfo->worldSize) +
                "; compile it with --plan to place it on several");
  weft::runtime::Executor::Options executorOptions;
  executorOptions.comm = comm.get();
  std::string device = absl::GetFlag(FLAGS_device);
  if (device != "cpu" && device != "cuda")
    return fail("unknown --device '" + device + "' (supported: cpu, cuda)");
  executorOptions.cuda = device == "cuda";
  if (const char *graphs = std::getenv("WEFT_CUDA_GRAPHS"))
    executorOptions.cudaGraphs = std::string(graphs) != "0";
  auto executor =
      weft::runtime::Executor::create(std::move(*bundle), executorOptions);
  if (!executor.ok())
    return fail(executor.status());
  weft::runtime::Executor &ex = **executor;
  if (executorOptions.cuda && rankInfo->rank == 0)
    std::fprintf(stderr, "weft-run: on %s\n", ex.device().c_str());
  ex.initialize(absl::GetFlag(FLAGS_seed));
  if (std::string init = absl::GetFlag(FLAGS_init_from); !init.empty()) {
    auto weights = weft::runtime::SafetensorsFile::read(init);
    if (!weights.ok())
      return fail(weights.status());
    if (absl::Status s = ex.load(*weights, /*requireAll=*/true); !s.ok())
      return fail(s);
  }

  std::string data = absl::GetFlag(FLAGS_data),
              tokenizer = absl::GetFlag(FLAGS_tokenizer);
  if (data.empty())
    return fail("--data is required");
  if (!tokenizer.empty() && tokenizer != "bytes")
    return fail("unknown --tokenizer '" + tokenizer + "' (supported: bytes)");
  auto tokens = tokenizer == "bytes"
                    ? weft::runtime::readByteTokens(data)
                    : weft::runtime::readTokenFile(
                          data, absl::GetFlag(FLAGS_token_bytes));
  if (!tokens.ok())
    return fail(tokens.status());
  int64_t batch = ex.bundle().metaInt("batch"),
          seq = ex.bundle().metaInt("seq"),
          vocab = ex.bundle().metaInt("vocab");
  if (batch <= 0 || seq <= 0 || vocab <= 0)
    return fail(positional[1] +
                std::string(": manifest meta lacks batch, seq or vocab"));
  auto sampler = weft::runtime::BatchSampler::create(
      std::move(*tokens), batch, seq, vocab, absl::GetFlag(FLAGS_seed), data);
  if (!sampler.ok())
    return fail(sampler.status());
  // The sample continues a window from a third of the way into the data.
  const std::vector<uint32_t> &stream = sampler->stream();
  size_t promptStart = stream.size() / 3;
  std::vector<uint32_t> prompt(
      stream.begin() + promptStart,
      stream.begin() +
          std::min(stream.size(), promptStart + std::min<size_t>(seq / 2, 32)));

  int64_t steps = absl::GetFlag(FLAGS_steps);
  if (steps < 0)
    return fail("--steps must be non-negative");
  int64_t warmup = absl::GetFlag(FLAGS_warmup);
  weft::runtime::LrSchedule schedule{absl::GetFlag(FLAGS_lr),
                                     warmup >= 0 ? warmup : steps / 10, steps,
                                     absl::GetFlag(FLAGS_min_lr_ratio)};
  weft::runtime::TrainLoop loop(ex, std::move(*sampler), schedule);

  std::ofstream metrics;
  if (std::string path = absl::GetFlag(FLAGS_metrics);
      leader && !path.empty()) {
    metrics.open(path, std::ios::app);
    if (!metrics)
      return fail(path + ": cannot open for writing");
  }
  bool tty = isatty(fileno(stderr));
  // Test hook: WEFT_TEST_EXIT=R:S makes rank R die before step S, so tests
  // can check that the other ranks report it instead of hanging.
  int64_t dieRank = -1, dieStep = -1;
  if (const char *die = std::getenv("WEFT_TEST_EXIT"))
    std::sscanf(die, "%ld:%ld", &dieRank, &dieStep);
  bool writeMetrics = !absl::GetFlag(FLAGS_metrics).empty();
  for (int64_t s = 0; s < steps; ++s) {
    if (rankInfo->rank == dieRank && s + 1 == dieStep)
      ::_exit(3);
    auto report = loop.step();
    if (!report.ok())
      return fail(report.status());
    // Every rank's peak memory, gathered to all (rank order) — a collective
    // every rank runs, so only when metrics are written (the flag is the
    // same on every rank).
    std::vector<float> peaks(rankInfo->worldSize,
                             static_cast<float>(peakRssBytes() / 1024.0));
    if (comm && writeMetrics) {
      float mine = peaks[0];
      if (absl::Status st = comm->allGather({}, &mine, peaks.data(), 1);
          !st.ok())
        return fail(st);
    }
    if (!leader)
      continue;
    progress(*report, steps, tty);
    if (metrics.is_open()) {
      std::vector<int64_t> peakBytes;
      for (float kb : peaks)
        peakBytes.push_back(static_cast<int64_t>(kb) * 1024);
      metrics << nlohmann::json{{"step", report->step},
                                {"loss", report->loss},
                                {"grad_norm", report->gradNorm},
                                {"lr", report->lr},
                                {"tokens_per_s",
                                 report->tokens / report->seconds},
                                {"step_s", report->seconds},
                                {"ranks", rankInfo->worldSize},
                                {"peak_memory_bytes", peakBytes}}
                     .dump()
              << "\n";
    }
  }

  // Every rank takes part in gathering sharded parameters; rank 0 writes.
  if (std::string path = absl::GetFlag(FLAGS_save); !path.empty()) {
    std::vector<weft::runtime::TensorToWrite> out;
    for (const weft::runtime::ParamSpec &p : ex.bundle().params)
      if (!p.state) {
        auto whole = ex.gatherParam(p.name);
        if (!whole.ok())
          return fail(whole.status());
        out.push_back({p.name, weft::runtime::DType::F32,
                       ex.bundle().mesh.globalShape(p.shape, p.sharding),
                       std::vector<double>(whole->begin(), whole->end())});
      }
    if (leader) {
      if (absl::Status s =
              weft::runtime::writeSafetensors(path, out, {{"format", "pt"}});
          !s.ok())
        return fail(s);
      std::cerr << "saved " << out.size() << " tensors to " << path << "\n";
    }
  }
  if (int64_t n = absl::GetFlag(FLAGS_sample); n > 0) {
    auto generated = loop.sample(prompt, n, absl::GetFlag(FLAGS_temperature),
                                 absl::GetFlag(FLAGS_seed));
    if (!generated.ok())
      return fail(generated.status());
    if (!leader) {
      // Every rank ran the forward program (it has collectives); rank 0
      // prints.
    } else if (tokenizer == "bytes") {
      std::cout << "--- sample ---\n"
                << weft::runtime::decodeByteTokens(prompt) << "|"
                << weft::runtime::decodeByteTokens(*generated) << "\n";
    } else {
      for (uint32_t t : *generated)
        std::cout << t << " ";
      std::cout << "\n";
    }
  }
  return 0;
}

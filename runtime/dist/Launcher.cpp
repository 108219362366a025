//===- Launcher.cpp - starting a job's ranks on this machine --------------===//

#include "runtime/dist/Launcher.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <optional>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace weft::runtime {
namespace {

/// The signal that asked the launcher to stop. A signal handler can reach
/// nothing but static storage; launchRanks clears it before it waits.
volatile sig_atomic_t stopSignal = 0;

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

/// Runs in the forked child: becomes rank `env`'s process or exits. Only
/// _exit may end a child whose exec failed (it shares the parent's stdio
/// buffers and exit handlers).
[[noreturn]] void
becomeRank(pid_t launcher,
           const std::vector<std::pair<std::string, std::string>> &env,
           const std::string &executable, const std::vector<char *> &argv,
           const std::string &program) {
  // A rank never outlives its launcher (killed by a scheduler, say).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher)
    ::_exit(1);
  for (const auto &[name, value] : env)
    ::setenv(name.c_str(), value.c_str(), 1);
  ::execv(executable.c_str(), argv.data());
  std::perror((program + ": exec").c_str());
  ::_exit(127);
}

} // namespace

absl::StatusOr<bool> shouldLaunch(int nproc) {
  if (nproc < 1)
    return absl::InvalidArgumentError("--nproc must be at least 1");
  if (nproc == 1)
    return false;
  // A rank mpirun or srun started, of a job of several, asked to start
  // ranks itself.
  for (auto [rank, size] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        std::pair{"SLURM_PROCID", "SLURM_NTASKS"}})
    if (!std::getenv("RANK") && std::getenv(rank) && std::getenv(size) &&
        std::string(std::getenv(size)) != "1")
      return absl::InvalidArgumentError(absl::StrCat(
          "--nproc ", nproc, " asks to start the job's ranks here, but ", size,
          " is set (this process is one rank of a job mpirun or srun "
          "started): give one or the other"));
  if (!std::getenv("RANK"))
    return true;
  // The launcher's own ranks run the same command line with RANK set; a
  // user who sets RANK (one rank of a job started by a scheduler) and
  // asks for --nproc means two different things.
  if (std::getenv(kLaunchedVar))
    return false;
  return absl::InvalidArgumentError(absl::StrCat(
      "--nproc ", nproc,
      " asks to start the job's ranks here, but RANK is set (this process is "
      "one rank of a job a scheduler started): give one or the other"));
}

std::vector<std::pair<std::string, std::string>>
rankEnvironment(int rank, int nproc, const std::string &masterAddr,
                const std::string &masterPort) {
  return {{"RANK", std::to_string(rank)},
          {kLaunchedVar, "1"},
          {"LOCAL_RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(nproc)},
          {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
          {"MASTER_ADDR", masterAddr},
          {"MASTER_PORT", masterPort}};
}

absl::Status launchRanks(const LaunchOptions &options, const Log &log) {
  if (options.nproc < 1 || options.argv.empty())
    return absl::InvalidArgumentError(
        "a launch needs at least one rank and a command line");
  const char *addrVar = std::getenv("MASTER_ADDR");
  const char *portVar = std::getenv("MASTER_PORT");
  std::string addr = addrVar ? addrVar : "127.0.0.1";
  std::string port = portVar ? portVar : std::to_string(freePort());
  std::vector<char *> argv;
  std::vector<std::string> args = options.argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  // SIGINT and SIGTERM to the launcher stop every rank: the handler only
  // records the signal; the wait loop below forwards it.
  stopSignal = 0;
  struct sigaction stop = {}, oldInt = {}, oldTerm = {};
  stop.sa_handler = [](int signal) { stopSignal = signal; };
  ::sigaction(SIGINT, &stop, &oldInt);
  ::sigaction(SIGTERM, &stop, &oldTerm);
  auto restore = [&] {
    ::sigaction(SIGINT, &oldInt, nullptr);
    ::sigaction(SIGTERM, &oldTerm, nullptr);
  };

  std::vector<pid_t> pids;
  pid_t launcher = ::getpid();
  for (int r = 0; r < options.nproc; ++r) {
    auto env = rankEnvironment(r, options.nproc, addr, port);
    pid_t pid = ::fork();
    if (pid < 0) {
      std::string message = "cannot start rank " + std::to_string(r);
      log.error(message);
      restore();
      return absl::ResourceExhaustedError(message);
    }
    if (pid == 0)
      becomeRank(launcher, env, options.executable, argv, log.program());
    pids.push_back(pid);
  }

  int remaining = options.nproc;
  absl::Status result;
  bool forwarded = false;
  std::vector<bool> ended(pids.size(), false);
  // SIGTERM to every rank still running but `except`; SIGKILL to those left
  // once the grace period is over (checked in the loop).
  std::optional<std::chrono::steady_clock::time_point> killAt;
  auto stopRanks = [&](pid_t except) {
    for (size_t r = 0; r < pids.size(); ++r)
      if (!ended[r] && pids[r] != except)
        ::kill(pids[r], SIGTERM);
    killAt = std::chrono::steady_clock::now() +
             std::chrono::milliseconds(
                 static_cast<int64_t>(options.stopGraceSeconds * 1000));
  };
  while (remaining > 0) {
    int status = 0;
    // Blocking until the job is being stopped, so the first rank to end is
    // the one reported (a signal to the launcher interrupts it); polled
    // after, so a rank that ignores SIGTERM can still be killed.
    pid_t pid = ::waitpid(-1, &status, killAt ? WNOHANG : 0);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      if (stopSignal && !forwarded) {
        log.say(log.program() + ": stopping " + std::to_string(remaining) +
                " ranks");
        stopRanks(-1);
        forwarded = true;
        result = absl::CancelledError(
            absl::StrCat("stopped by signal ", static_cast<int>(stopSignal)));
      }
      if (killAt && std::chrono::steady_clock::now() >= *killAt) {
        for (size_t r = 0; r < pids.size(); ++r)
          if (!ended[r]) {
            log.error(absl::StrCat(
                "rank ", r, " (pid ", pids[r], ") did not stop within ",
                options.stopGraceSeconds, " s of SIGTERM; killing it"));
            ::kill(pids[r], SIGKILL);
          }
        killAt.reset();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0)
      break;
    --remaining;
    int rank = static_cast<int>(std::find(pids.begin(), pids.end(), pid) -
                                pids.begin());
    if (rank < static_cast<int>(ended.size()))
      ended[rank] = true;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || !result.ok())
      continue;
    bool lost = WIFEXITED(status) && WEXITSTATUS(status) == kRankLostExit;
    std::string how =
        WIFSIGNALED(status)
            ? "was killed by signal " + std::to_string(WTERMSIG(status))
        : lost
            ? absl::StrCat("lost its device (exit status ", kRankLostExit, ")")
            : "exited with status " + std::to_string(WEXITSTATUS(status));
    std::string message = "rank " + std::to_string(rank) + " (pid " +
                          std::to_string(pid) + ") " + how;
    result =
        lost ? absl::UnavailableError(message) : absl::AbortedError(message);
    log.error(message + "; stopping the other ranks");
    // Let the survivors report the failure themselves first, then stop
    // them. Their transfers fail at once on a closed connection, but the
    // report looks for the dead rank for up to 0.4 s (Communicator::
    // failure) and, on a loaded host, 0.5 s was sometimes too little
    // (pipeline.test's DEAD flaked): a failed job ends 2 s later instead.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    stopRanks(pid);
  }
  restore();
  return result;
}

} // namespace weft::runtime

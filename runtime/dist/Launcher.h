//===- Launcher.h - starting a job's ranks on this machine ------*- C++ -*-===//
//
// torchrun for one node: runs one command as N rank processes, each with
// torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), and waits for them. The first rank to fail is
// named and the others are stopped, so a dead rank never leaves the job
// hanging; SIGINT or SIGTERM to the launcher stops every rank, and a rank
// never outlives its launcher.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DIST_LAUNCHER_H
#define WEFT_RUNTIME_DIST_LAUNCHER_H

#include "runtime/support/Log.h"

#include "absl/status/statusor.h"

#include <string>
#include <utility>
#include <vector>

namespace weft::runtime {

struct LaunchOptions {
  /// How many ranks to start.
  int nproc = 1;
  /// The command line every rank runs, argv[0] first.
  std::vector<std::string> argv;
  /// The program each rank executes: by default this one again.
  std::string executable = "/proc/self/exe";
  /// Seconds a rank has to end after SIGTERM before it gets SIGKILL (a rank
  /// stopped or hung in a kernel does not act on SIGTERM).
  double stopGraceSeconds = 10;
};

/// The exit status of a rank whose device is gone for good (a GPU fallen
/// off the bus; WEFT_INJECT=lose): the job cannot start again at its size.
/// sysexits.h's EX_UNAVAILABLE.
inline constexpr int kRankLostExit = 69;

/// Set in the environment of the ranks launchRanks starts, so they know
/// their RANK and --nproc came from it.
inline constexpr const char *kLaunchedVar = "WEFT_LAUNCHED";

/// What a process asked for `nproc` ranks does: an error when `nproc` is
/// below 1, or above 1 with RANK set by someone other than launchRanks (a
/// rank of a scheduler's job asked to start ranks); true when it should
/// start them (more than one, RANK not set); false when it is the job's
/// only rank or one launchRanks started.
absl::StatusOr<bool> shouldLaunch(int nproc);

/// The variables rank `rank` of `nproc` local ranks gets, in the order they
/// are set, for a rendezvous at `masterAddr`:`masterPort`.
std::vector<std::pair<std::string, std::string>>
rankEnvironment(int rank, int nproc, const std::string &masterAddr,
                const std::string &masterPort);

/// Starts `options.nproc` ranks and waits for all of them. The rendezvous
/// is at MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (default a port
/// free now). A launcher's output is its reports, so each failure is
/// written to `log` when it happens; the status returned is OK when every
/// rank exited with status 0, else the first failure again: UNAVAILABLE
/// when that rank exited with kRankLostExit, CANCELLED when the launcher
/// was stopped by a signal, ABORTED for any other failure.
absl::Status launchRanks(const LaunchOptions &options, const Log &log);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_LAUNCHER_H

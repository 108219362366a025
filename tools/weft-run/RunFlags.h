//===- RunFlags.h - weft-run's command line, read without exiting -*- C++
//-*-===//
//
// weft-run's flags as a library: parseRunFlags reads a command line into the
// job it describes and returns what is wrong with it as a status, where
// absl::ParseCommandLine prints and exits the process. So the launcher's
// command line can be tested and fuzzed (test/fuzz/run_flags_fuzzer.cpp).
// Flags are spelled with dashes (--init-from) like the other tools';
// underscores work too.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RUN_RUNFLAGS_H
#define WEFT_TOOLS_WEFT_RUN_RUNFLAGS_H

#include "runtime/train/Job.h"

#include "absl/status/statusor.h"

#include <string>
#include <vector>

namespace weft::run {

struct RunCommand {
  /// The job the flags describe, its bundle the one positional argument
  /// (the test hooks and WEFT_CUDA_GRAPHS, read from the environment, are
  /// main's to add).
  runtime::JobOptions job;
  /// --nproc, --stop-grace and --max-restarts: the launcher's.
  int nproc = 1;
  double stopGraceSeconds = 10;
  int64_t maxRestarts = 0;
  /// --elastic MIN (0: off): restart a job whose rank lost its device on
  /// at least MIN data-parallel replicas.
  int64_t elastic = 0;
  /// Where the bundle is in argv (a restart on fewer ranks swaps it).
  size_t bundleArg = 0;
  /// Abseil's usage flags as given (--help, --helpfull, --version, ...),
  /// spelled for absl::ParseCommandLine, which prints the usage and exits.
  /// With any of them the command needs no bundle.
  std::vector<std::string> usage;
};

/// Reads `argv` (the program first). Errors name the flag: an unknown flag,
/// a value missing or not of the flag's type, no bundle or two, a negative
/// --stop-grace. Every call starts from the flags' defaults.
absl::StatusOr<RunCommand> parseRunFlags(const std::vector<std::string> &argv);

/// Whether `status`, from parseRunFlags, is about one flag's spelling or
/// value in abseil's words; weft-run prints those as ParseCommandLine did
/// ("ERROR: Illegal value 'abc' specified for flag 'steps'").
bool isFlagSyntaxError(const absl::Status &status);

} // namespace weft::run

#endif // WEFT_TOOLS_WEFT_RUN_RUNFLAGS_H

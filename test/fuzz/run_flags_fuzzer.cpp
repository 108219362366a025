//===- run_flags_fuzzer.cpp - libFuzzer target for weft-run's flags -------===//
//
// The bytes as weft-run's command line, NUL-separated: parseRunFlags must
// refuse it with a status naming the flag or give a command whose options
// checkJobOptions then judges, never crash or exit. Arguments of the form
// RANK=..., WORLD_SIZE=..., LOCAL_RANK=..., MASTER_ADDR=..., MASTER_PORT=...
// or WEFT_LAUNCHED=... are set in the environment instead, for
// rankFromEnvironment and shouldLaunch.
//
//===----------------------------------------------------------------------===//

#include "tools/weft-run/RunFlags.h"

#include "runtime/dist/Communicator.h"
#include "runtime/dist/Launcher.h"
#include "runtime/train/Job.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
constexpr const char *kVariables[] = {"RANK",        "WORLD_SIZE",
                                      "LOCAL_RANK",  "MASTER_ADDR",
                                      "MASTER_PORT", "WEFT_LAUNCHED"};

/// Sets `arg` in the environment if it names one of kVariables.
bool setVariable(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return false;
  for (const char *name : kVariables)
    if (arg.compare(0, eq, name) == 0) {
      ::setenv(name, arg.c_str() + eq + 1, 1);
      return true;
    }
  return false;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Flags are process-global; parseRunFlags starts each call from their
  // defaults.
  for (const char *name : kVariables)
    ::unsetenv(name);
  std::vector<std::string> argv = {"weft-run"};
  std::string arg;
  for (size_t i = 0; i <= size; ++i) {
    if (i < size && data[i] != '\0') {
      arg += static_cast<char>(data[i]);
      continue;
    }
    if (!setVariable(arg))
      argv.push_back(arg);
    arg.clear();
  }
  absl::StatusOr<weft::run::RunCommand> command =
      weft::run::parseRunFlags(argv);
  if (command.ok()) {
    (void)weft::runtime::checkJobOptions(command->job);
    (void)weft::runtime::shouldLaunch(command->nproc);
  } else if (command.status().message().empty()) {
    std::abort(); // Every refusal says why.
  }
  (void)weft::runtime::rankFromEnvironment();
  return 0;
}

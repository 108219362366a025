//===- Log.cpp - a job's messages, said by one rank -----------------------===//

#include "runtime/support/Log.h"

#include <unistd.h>

namespace weft::runtime {

Log::Log(std::string program, Sink sink)
    : program_(std::move(program)), sink(std::move(sink)) {}

Log Log::forRank(int64_t rank, int64_t worldSize) const {
  Log log = *this;
  log.rank = rank;
  log.worldSize = worldSize;
  return log;
}

bool Log::isTerminal() const { return !sink && ::isatty(STDERR_FILENO); }

void Log::write(absl::string_view text) const {
  if (sink)
    sink(text);
  else
    (void)!::write(STDERR_FILENO, text.data(), text.size());
}

void Log::say(absl::string_view line) const {
  std::string text(line);
  text += '\n';
  write(text);
}

std::string Log::errorLine(absl::string_view message) const {
  std::string line = program_ + ": error: ";
  if (worldSize > 1)
    line += "rank " + std::to_string(rank) + ": ";
  return line.append(message.data(), message.size());
}

} // namespace weft::runtime

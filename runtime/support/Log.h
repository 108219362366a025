//===- Log.h - a job's messages, said by one rank ---------------*- C++ -*-===//
//
// The launcher and every rank of a job write to one terminal. A Log is a
// value passed to whatever reports: it knows the program that speaks (the
// prefix of its messages) and which rank it is, so an error of one rank of
// several names that rank. Each message is written whole with one call of
// the sink (by default one write(2) to stderr), so the lines of ranks
// sharing a terminal never interleave mid-line.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_LOG_H
#define WEFT_RUNTIME_SUPPORT_LOG_H

#include "absl/strings/string_view.h"

#include <cstdint>
#include <functional>
#include <string>

namespace weft::runtime {

class Log {
public:
  /// Receives each message's text whole, newline included.
  using Sink = std::function<void(absl::string_view text)>;

  /// Messages of `program`, written to stderr unless `sink` is given.
  explicit Log(std::string program, Sink sink = {});

  /// The same log said by `rank` of a job of `worldSize` ranks.
  Log forRank(int64_t rank, int64_t worldSize) const;

  const std::string &program() const { return program_; }
  /// Whether the messages go to a terminal (stderr, when it is one).
  bool isTerminal() const;

  /// Writes `text` as it is (a progress bar redraws a line without ending
  /// it).
  void write(absl::string_view text) const;
  /// Writes `line` and a newline.
  void say(absl::string_view line) const;
  /// "<program>: error: <message>", with "rank R: " before the message
  /// when the job has several ranks.
  std::string errorLine(absl::string_view message) const;
  void error(absl::string_view message) const { say(errorLine(message)); }

private:
  std::string program_;
  int64_t rank = 0, worldSize = 1;
  Sink sink;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_LOG_H

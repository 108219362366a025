//===- FaultInjection.cpp - faults on purpose, for tests ------------------===//

#include "runtime/train/FaultInjection.h"

#include "runtime/dist/Launcher.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace weft::runtime {

absl::StatusOr<std::vector<Fault>> parseFaults(const std::string &text) {
  std::vector<Fault> faults;
  for (absl::string_view one : absl::StrSplit(text, ',')) {
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "WEFT_INJECT='", text, "'",
          one.size() == text.size() ? "" : absl::StrCat(": '", one, "'"), " ",
          why,
          " (each fault is "
          "KIND:rank=R:step=S[:param=NAME][:bit=B][:attempt=A], "
          "KIND one of bitflip, glitch, nan, kill, stop, lose)"));
    };
    std::vector<std::string> parts = absl::StrSplit(one, ':');
    Fault f;
    if (parts[0] == "bitflip")
      f.kind = Fault::Kind::BitFlip;
    else if (parts[0] == "nan")
      f.kind = Fault::Kind::NaN;
    else if (parts[0] == "kill")
      f.kind = Fault::Kind::Kill;
    else if (parts[0] == "stop")
      f.kind = Fault::Kind::Stop;
    else if (parts[0] == "lose")
      f.kind = Fault::Kind::Lose;
    else if (parts[0] == "glitch")
      f.kind = Fault::Kind::Glitch;
    else
      return bad("has an unknown kind");
    for (size_t i = 1; i < parts.size(); ++i) {
      std::pair<std::string, std::string> kv = absl::StrSplit(parts[i], '=');
      int64_t *number = kv.first == "rank"      ? &f.rank
                        : kv.first == "step"    ? &f.step
                        : kv.first == "attempt" ? &f.attempt
                        : kv.first == "bit"     ? &f.bit
                                                : nullptr;
      if (number) {
        if (!absl::SimpleAtoi(kv.second, number) || *number < 0)
          return bad(
              absl::StrCat("has ", kv.first, " not a non-negative integer"));
      } else if (kv.first == "param" && !kv.second.empty()) {
        f.param = kv.second;
      } else {
        return bad(absl::StrCat("has an unknown field '", parts[i], "'"));
      }
    }
    if (f.rank < 0 || f.step < 1)
      return bad("needs rank=R and step=S (S from 1)");
    bool flips =
        f.kind == Fault::Kind::BitFlip || f.kind == Fault::Kind::Glitch;
    if (f.bit > 31 || (f.bit >= 0 && !flips))
      return bad("takes bit=B (0 to 31) only for bitflip and glitch");
    bool corrupts = flips || f.kind == Fault::Kind::NaN;
    if (corrupts != !f.param.empty())
      return bad(corrupts ? "needs param=NAME" : "takes no param");
    faults.push_back(f);
  }
  return faults;
}

absl::Status injectFaults(SchedExecutor &ex, const std::vector<Fault> &faults,
                          int64_t rank, int64_t step, int64_t attempt,
                          bool afterStep) {
  for (const Fault &f : faults) {
    if (f.rank != rank || f.step != step ||
        (f.attempt >= 0 && f.attempt != attempt) ||
        (f.kind == Fault::Kind::Glitch) != afterStep)
      continue;
    if (f.kind == Fault::Kind::Kill)
      ::raise(SIGKILL);
    if (f.kind == Fault::Kind::Lose) {
      std::fprintf(stderr,
                   "rank %lld: WEFT_INJECT: the device is lost; exiting with "
                   "status %d\n",
                   static_cast<long long>(rank), kRankLostExit);
      std::_Exit(kRankLostExit);
    }
    if (f.kind == Fault::Kind::Stop) {
      ::raise(SIGSTOP);
      continue;
    }
    absl::StatusOr<std::vector<float>> block = ex.param(f.param);
    if (!block.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("WEFT_INJECT: ", block.status().message()));
    if (block->empty())
      continue;
    if (f.kind == Fault::Kind::NaN) {
      (*block)[0] = std::numeric_limits<float>::quiet_NaN();
    } else {
      uint32_t bits;
      std::memcpy(&bits, block->data(), 4);
      bits ^= 1u << (f.bit >= 0 ? f.bit : 20);
      std::memcpy(block->data(), &bits, 4);
    }
    if (absl::Status s = ex.setParam(f.param, *block); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

} // namespace weft::runtime

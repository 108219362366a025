//===- Trace.cpp - a Chrome trace of a rank's steps -----------------------===//

#include "runtime/train/Trace.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include <cstdio>
#include <filesystem>

namespace weft::runtime {

absl::StatusOr<std::pair<int64_t, int64_t>>
parseProfileSteps(const std::string &text) {
  if (text.empty())
    return std::pair<int64_t, int64_t>{1, -1};
  size_t colon = text.find(':');
  int64_t first = 0, last = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(text.substr(0, colon), &first) ||
      !absl::SimpleAtoi(text.substr(colon + 1), &last) || first < 1 ||
      last < first)
    return absl::InvalidArgumentError(
        absl::StrCat("--profile-steps '", text,
                     "' is not A:B with 1 <= A <= B (the steps to trace)"));
  return std::pair<int64_t, int64_t>{first, last};
}

Trace::Trace(const std::string &path, int64_t rank, int64_t ranks,
             int64_t first, int64_t last)
    : rank(rank), first(first), last(last) {
  file = path;
  if (ranks > 1 && rank > 0) {
    std::filesystem::path p(path);
    file = (p.parent_path() / absl::StrCat(p.stem().string(), ".rank", rank,
                                           p.extension().string()))
               .string();
  }
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"name", absl::StrCat("rank ", rank)}}}});
}

bool Trace::startStep(int64_t step) {
  on = step >= first && (last < 0 || step <= last);
  return on;
}

int Trace::track(const std::string &name) {
  auto [it, added] = tracks.insert({name, static_cast<int>(tracks.size())});
  if (added)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"tid", it->second},
                      {"args", {{"name", name}}}});
  return it->second;
}

void Trace::span(const std::string &trackName, const std::string &name,
                 const std::string &category, Clock::time_point start,
                 Clock::time_point end, nlohmann::json args) {
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  nlohmann::json event = {{"name", name},
                          {"cat", category},
                          {"ph", "X"},
                          {"pid", rank},
                          {"tid", track(trackName)},
                          {"ts", us(start)},
                          {"dur", us(end) - us(start)}};
  if (!args.is_null())
    event["args"] = std::move(args);
  events.push_back(std::move(event));
}

SchedExecutor::InstructionHook Trace::instructionHook() {
  return [this](const sched::Program &program, int64_t index,
                Clock::time_point start, Clock::time_point end) {
    if (!on)
      return;
    const sched::Instruction &inst = program.instructions[index];
    std::string name = sched::opName(inst.op), category = name;
    if (inst.op == sched::Op::Launch) {
      name = inst.as<sched::LaunchAttrs>().kernel;
      category = "kernel";
    }
    nlohmann::json args = {{"program", program.name}, {"instruction", index}};
    if (!inst.layer.empty())
      args["layer"] = inst.layer;
    span("stream " + program.streams[inst.stream], name, category, start, end,
         std::move(args));
  };
}

absl::Status Trace::write() const {
  std::string text =
      nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}
          .dump() +
      "\n";
  FILE *f = std::fopen(file.c_str(), "wb");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f)
    ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return absl::InvalidArgumentError(file + ": cannot write the trace");
  return absl::OkStatus();
}

} // namespace weft::runtime

//===- TrainSchedule.cpp - one training step as the bundle schedules it ---===//

#include "runtime/train/TrainSchedule.h"

#include <algorithm>

namespace weft::runtime {

absl::StatusOr<TrainSteps> trainSteps(const sched::SchedBundle &bundle) {
  auto fail = [&](const std::string &what) {
    return absl::InvalidArgumentError(absl::StrCat(bundle.dir, ": ", what));
  };
  const sched::Schedule *schedule = bundle.schedule("train");
  if (!schedule)
    return fail("has no 'train' schedule; compile it with weftc compile");
  // Pipeline schedules give each pp coordinate a sequence of its own; this
  // runtime runs one sequence on every rank.
  if (schedule->sequences.size() != 1 || schedule->sequences[0].axis)
    return fail("schedule 'train' must be one sequence for every rank (this "
                "runtime has no pipeline stages yet)");
  TrainSteps steps;
  steps.runs = schedule->sequences[0].runs;
  steps.microbatches = schedule->microbatches;
  steps.takesTokens.assign(bundle.programs.size(), false);
  steps.takesRates.assign(bundle.programs.size(), false);
  if (steps.runs.empty())
    return fail("schedule 'train' runs nothing");
  auto isIds = [](const sched::TensorType &t) {
    return t.dtype == DType::I32 && t.shape.size() == 2;
  };
  auto isScalar = [](const sched::TensorType &t) {
    return t.dtype == DType::F32 && t.shape.empty();
  };
  for (const sched::Run &run : steps.runs) {
    const sched::Program &p = bundle.programs[run.programIndex];
    const std::vector<sched::ProgramInput> &in = p.inputs;
    bool ids = in.size() >= 2 && isIds(in[0].type) && isIds(in[1].type) &&
               in[1].type.shape == in[0].type.shape;
    size_t rates = ids ? 2 : 0;
    bool scalars = in.size() == rates + 2 && isScalar(in[rates].type) &&
                   isScalar(in[rates + 1].type);
    if (!(in.size() == rates || scalars) || in.empty())
      return fail("program '" + p.name +
                  "' must take tokens and labels [batch, seq] I32, then lr "
                  "and step 0-d F32 (either pair may be absent)");
    steps.takesTokens[run.programIndex] = ids;
    steps.takesRates[run.programIndex] = scalars;
    if (!ids)
      continue;
    if (!steps.tokens) {
      steps.tokens = &in[0];
      steps.rows = in[0].type.shape[0];
      steps.seq = in[0].type.shape[1];
    } else if (in[0].type.shape != steps.tokens->type.shape) {
      return fail("programs '" + p.name +
                  "' and the schedule's first take "
                  "tokens of different shapes");
    }
  }
  if (!steps.tokens)
    return fail("schedule 'train' runs no program that takes tokens");
  steps.reporter = steps.runs.back().program;
  const sched::Program *reporter = bundle.program(steps.reporter);
  for (const char *name : {"loss", "grad_norm"})
    if (std::none_of(reporter->outputs.begin(), reporter->outputs.end(),
                     [&](const sched::Output &o) { return o.name == name; }))
      return fail("program '" + steps.reporter +
                  "', the train schedule's last, must name outputs loss and "
                  "grad_norm");
  return steps;
}

} // namespace weft::runtime

//===- TrainSchedule.cpp - one training step as the bundle schedules it ---===//

#include "runtime/train/TrainSchedule.h"

#include <algorithm>
#include <map>

namespace weft::runtime {

absl::StatusOr<TrainSteps> trainSteps(const sched::SchedBundle &bundle,
                                      int64_t rank) {
  auto fail = [&](const std::string &what) {
    return absl::InvalidArgumentError(absl::StrCat(bundle.dir, ": ", what));
  };
  const sched::Schedule *schedule = bundle.schedule("train");
  if (!schedule)
    return fail("has no 'train' schedule; compile it with weftc compile");
  // Pipeline schedules give each coordinate along an axis a sequence of
  // its own.
  const sched::Sequence *mine = &bundle.sequenceFor(*schedule, rank);
  TrainSteps steps;
  steps.runs = mine->runs;
  steps.microbatches = schedule->microbatches;
  steps.takesTokens.assign(bundle.programs.size(), false);
  steps.takesRates.assign(bundle.programs.size(), false);
  steps.stashInputs.assign(bundle.programs.size(), 0);
  steps.stashOutputs.assign(bundle.programs.size(), 0);
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
    // Outputs stash.0, stash.1, ... in order, handed to the next program
    // of the micro-batch (f32, bf16, f16 or i32, as its input is).
    int64_t stashOut = 0;
    for (const sched::Output &o : p.outputs)
      if (o.name.rfind("stash.", 0) == 0) {
        if (o.name != "stash." + std::to_string(stashOut))
          return fail("program '" + p.name + "' names output '" + o.name +
                      "' where stash." + std::to_string(stashOut) + " is due");
        ++stashOut;
      }
    size_t stashIn = scalars ? 0 : in.size() - rates;
    for (size_t i = rates; i < in.size() && !scalars; ++i)
      if (DType d = in[i].type.dtype; d != DType::F32 && d != DType::I32 &&
                                      d != DType::BF16 && d != DType::F16)
        return fail("program '" + p.name + "' takes stashed input " +
                    std::to_string(i - rates) + " of dtype " +
                    sched::dtypeText(d) +
                    "; stashes between programs are f32, bf16, f16 or i32");
    steps.takesTokens[run.programIndex] = ids;
    steps.takesRates[run.programIndex] = scalars;
    steps.stashInputs[run.programIndex] = static_cast<int64_t>(stashIn);
    steps.stashOutputs[run.programIndex] = stashOut;
    for (const sched::Instruction &ins : p.instructions) {
      steps.sends |= ins.op == sched::Op::Send;
      // A dropout mask cut into micro-batches must be cut as the schedule
      // runs them, or micro-batches would share masks.
      const sched::MaskBlockAttrs *block =
          ins.op == sched::Op::Dropout ? &ins.as<sched::DropoutAttrs>().block
          : ins.op == sched::Op::Attention || ins.op == sched::Op::AttentionGrad
              ? &ins.as<sched::AttentionAttrs>().block
              : nullptr;
      if (block && block->hasMicrobatch &&
          block->microbatches != steps.microbatches)
        return fail("program '" + p.name + "' cuts a dropout mask into " +
                    std::to_string(block->microbatches) +
                    " micro-batches, but schedule 'train' runs " +
                    std::to_string(steps.microbatches));
    }
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
  // Each stash is taken stored as it was made (an f32 value into a bf16
  // input would be rounded): checked once, walking the schedule as
  // runTrainSteps hands stashes on.
  std::map<std::pair<int64_t, int64_t>, std::vector<DType>> made;
  for (const sched::Run &run : steps.runs) {
    const sched::Program &p = bundle.programs[run.programIndex];
    std::pair<int64_t, int64_t> key{run.microbatch, run.chunk};
    if (int64_t n = steps.stashInputs[run.programIndex]; n > 0) {
      std::vector<DType> kept = std::move(made[key]);
      made.erase(key);
      for (int64_t i = 0; i < n && i < static_cast<int64_t>(kept.size()); ++i)
        if (DType want = p.inputs[p.inputs.size() - n + i].type.dtype;
            kept[i] != want)
          return fail("program '" + p.name + "' takes stashed input " +
                      std::to_string(i) + " as " + sched::dtypeText(want) +
                      ", but the program before it for micro-batch " +
                      std::to_string(run.microbatch) + " kept it as " +
                      sched::dtypeText(kept[i]));
    }
    for (int64_t i = 0; i < steps.stashOutputs[run.programIndex]; ++i)
      for (const sched::Output &o : p.outputs)
        if (o.name == "stash." + std::to_string(i))
          made[key].push_back(p.buffers[o.buffer].type.dtype);
  }
  // A pipeline's middle stages take no tokens; every other step does.
  if (!steps.tokens && !mine->axis)
    return fail("schedule 'train' runs no program that takes tokens");
  steps.reporter = steps.runs.back().program;
  const sched::Program *reporter = bundle.program(steps.reporter);
  for (const char *name : {"loss", "grad_norm"})
    if (std::none_of(reporter->outputs.begin(), reporter->outputs.end(),
                     [&](const sched::Output &o) { return o.name == name; }))
      return fail("program '" + steps.reporter +
                  "', the train schedule's last, must name outputs loss and "
                  "grad_norm");
  steps.scalesLoss =
      std::any_of(reporter->outputs.begin(), reporter->outputs.end(),
                  [](const sched::Output &o) { return o.name == "skipped"; });
  return steps;
}

} // namespace weft::runtime

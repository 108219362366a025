//===- TrainLoop.cpp - training a bundle on the CPU -----------------------===//

#include "runtime/train/TrainLoop.h"

#include "runtime/support/Random.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace weft::runtime {

absl::Status TrainLoop::check(const Bundle &bundle) {
  auto fail = [&](const std::string &what) {
    return absl::InvalidArgumentError(absl::StrCat(bundle.path, ": ", what));
  };
  auto inputs = [&](const char *name) -> std::vector<const ValueSpec *> {
    std::vector<const ValueSpec *> out;
    auto it = bundle.programs.find(name);
    if (it != bundle.programs.end())
      for (int64_t id : it->second.inputs)
        out.push_back(&it->second.values[id]);
    return out;
  };
  std::vector<const ValueSpec *> step = inputs("step"),
                                 forward = inputs("forward");
  if (!bundle.programs.count("step") || !bundle.programs.count("forward"))
    return fail(
        "needs 'step' and 'forward' programs; compile it with weftc compile");
  auto isIds = [](const ValueSpec *v) {
    return v->dtype == DType::I32 && v->shape.size() == 2;
  };
  auto isScalar = [](const ValueSpec *v) {
    return v->dtype == DType::F32 && v->shape.empty();
  };
  if (step.size() != 4 || !isIds(step[0]) || step[1]->shape != step[0]->shape ||
      !isIds(step[1]) || !isScalar(step[2]) || !isScalar(step[3]))
    return fail("program 'step' must take tokens and labels [batch, seq] I32, "
                "then lr and step 0-d F32");
  if (forward.size() != 2 || forward[0]->shape != step[0]->shape ||
      !isIds(forward[0]) || forward[1]->shape != step[0]->shape)
    return fail("program 'forward' must take the step's tokens and labels");
  if (!bundle.programs.at("step").output("loss") ||
      !bundle.programs.at("step").output("grad_norm") ||
      !bundle.programs.at("forward").output("logits"))
    return fail("programs must name outputs loss, grad_norm (step) and logits "
                "(forward)");
  return absl::OkStatus();
}

TrainLoop::TrainLoop(Executor &executor, BatchSampler sampler,
                     LrSchedule schedule)
    : executor(executor), sampler(std::move(sampler)), schedule(schedule) {
  const ProgramSpec &step = executor.bundle().programs.at("step");
  const ValueSpec &input = step.values[step.inputs[0]];
  batch = input.shape[0];
  seq = input.shape[1];
  const MeshSpec &mesh = executor.bundle().mesh;
  std::vector<int64_t> global = mesh.globalShape(input.shape, input.sharding);
  globalBatch = global[0];
  globalSeq = global[1];
  start = mesh.blockStart(executor.rank(), input.shape, input.sharding);
  tokens.resize(batch * seq);
  labels.resize(batch * seq);
  globalTokens.resize(globalBatch * globalSeq);
  globalLabels.resize(globalBatch * globalSeq);
}

absl::StatusOr<StepReport> TrainLoop::step() {
  int64_t n = steps + 1;
  sampler.fill(n, globalTokens.data(), globalLabels.data());
  forEachInBlock({batch, seq}, {globalBatch, globalSeq}, start,
                 [&](int64_t i, int64_t g) {
                   tokens[i] = globalTokens[g];
                   labels[i] = globalLabels[g];
                 });
  float lr = static_cast<float>(schedule.at(n)),
        stepNumber = static_cast<float>(n);
  auto start = std::chrono::steady_clock::now();
  absl::Status status =
      executor.run("step", {{{batch, seq}, DType::I32, tokens.data()},
                            {{batch, seq}, DType::I32, labels.data()},
                            {{}, DType::F32, &lr},
                            {{}, DType::F32, &stepNumber}});
  if (!status.ok())
    return status;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  steps = n;
  StepReport report;
  report.step = n;
  report.loss = *executor.scalarOutput("step", "loss");
  report.gradNorm = *executor.scalarOutput("step", "grad_norm");
  report.lr = lr;
  report.seconds = seconds;
  report.tokens = globalBatch * globalSeq;
  if (!std::isfinite(report.loss))
    return absl::InternalError(absl::StrCat("step ", n,
                                            ": the loss is not finite (",
                                            report.loss, "); lower --lr?"));
  return report;
}

absl::StatusOr<std::vector<uint32_t>>
TrainLoop::sample(std::vector<uint32_t> context, int64_t count,
                  double temperature, uint64_t seed) {
  const ProgramSpec &forward = executor.bundle().programs.at("forward");
  const ValueSpec &input = forward.values[forward.inputs[0]];
  // Each rank continues the window in its own first row, which needs the
  // whole sequence on every rank.
  if (input.sharding.size() > 1 && !input.sharding[1].empty())
    return absl::UnimplementedError(
        "sampling from a sequence-parallel bundle (sp=on) is not supported "
        "yet; sample from a checkpoint with a bundle compiled without sp");
  const std::vector<int64_t> &shape = input.shape;
  int64_t b = shape[0], s = shape[1];
  std::vector<int32_t> window(b * s, 0), zeros(b * s, 0);
  std::vector<uint32_t> out;
  if (context.empty())
    context.push_back(0);
  for (int64_t t = 0; t < count; ++t) {
    // The last s tokens, left-aligned: position len-1 predicts the next.
    int64_t len = std::min<int64_t>(s, context.size());
    for (int64_t i = 0; i < len; ++i)
      window[i] = static_cast<int32_t>(context[context.size() - len + i]);
    absl::Status status =
        executor.run("forward", {{{b, s}, DType::I32, window.data()},
                                 {{b, s}, DType::I32, zeros.data()}});
    if (!status.ok())
      return status;
    absl::StatusOr<std::vector<float>> logits =
        executor.gatherOutput("forward", "logits");
    if (!logits.ok())
      return logits.status();
    // Gathered logits cover the job's whole batch: [globalB, s, vocab].
    int64_t rows = executor.bundle().mesh.globalShape(shape, input.sharding)[0];
    int64_t vocab = static_cast<int64_t>(logits->size()) / (rows * s);
    const float *row = logits->data() + (len - 1) * vocab;
    int64_t next = 0;
    if (temperature <= 0) {
      for (int64_t v = 1; v < vocab; ++v)
        if (row[v] > row[next])
          next = v;
    } else {
      double m = row[0], total = 0;
      for (int64_t v = 1; v < vocab; ++v)
        m = std::max(m, static_cast<double>(row[v]));
      std::vector<double> p(vocab);
      for (int64_t v = 0; v < vocab; ++v)
        total += p[v] = std::exp((row[v] - m) / temperature);
      double u = uniform24(seed, t) * total;
      for (next = 0; next < vocab - 1 && u >= p[next]; ++next)
        u -= p[next];
    }
    context.push_back(static_cast<uint32_t>(next));
    out.push_back(static_cast<uint32_t>(next));
  }
  return out;
}

} // namespace weft::runtime

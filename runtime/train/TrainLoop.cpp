//===- TrainLoop.cpp - training a bundle ----------------------------------===//

#include "runtime/train/TrainLoop.h"

#include "runtime/exec/BundleData.h"
#include "runtime/support/Random.h"
#include "runtime/train/TrainSchedule.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

namespace weft::runtime {

absl::Status TrainLoop::check(const sched::SchedBundle &bundle) {
  auto fail = [&](const std::string &what) {
    return absl::InvalidArgumentError(absl::StrCat(bundle.dir, ": ", what));
  };
  absl::StatusOr<TrainSteps> steps = trainSteps(bundle);
  if (!steps.ok())
    return steps.status();
  // Tokens and labels are cut alike: one reordering serves both.
  if (const sched::Program *first = bundle.tokensProgram();
      first && first->inputs.size() > 1 &&
      first->inputs[0].sequenceChunks != first->inputs[1].sequenceChunks)
    return fail(absl::StrCat("program '", first->name, "' holds its tokens in ",
                             first->inputs[0].sequenceChunks,
                             " sequence chunks but its labels in ",
                             first->inputs[1].sequenceChunks));
  // The forward (sampling) is optional: pipelined bundles have none yet.
  const sched::Program *forward = bundle.program("forward");
  if (!forward)
    return absl::OkStatus();
  const sched::Program *first = bundle.tokensProgram();
  const sched::ProgramInput *tokens = first ? &first->inputs[0] : nullptr;
  const std::vector<sched::ProgramInput> &in = forward->inputs;
  if (in.size() != 2 || !tokens || in[0].type.shape != tokens->type.shape ||
      in[1].type.shape != tokens->type.shape ||
      in[0].type.dtype != DType::I32 || in[1].type.dtype != DType::I32)
    return fail("program 'forward' must take one micro-batch's tokens and "
                "labels, as the train schedule's programs do");
  if (std::none_of(forward->outputs.begin(), forward->outputs.end(),
                   [](const sched::Output &o) { return o.name == "logits"; }))
    return fail("program 'forward' must name an output logits");
  return absl::OkStatus();
}

/// The split of a program input (none: whole on every rank).
static Sharding splitOf(const sched::ProgramInput &input) {
  return input.split ? *input.split : Sharding();
}

TrainLoop::TrainLoop(SchedExecutor &executor, DataMixture data,
                     LrSchedule schedule)
    : executor(executor), mesh(meshSpecOf(executor.bundle())),
      data(std::move(data)), schedule(schedule),
      runs(*trainSteps(executor.bundle(), executor.rank())) {
  // This rank's block of the step's batch: every micro-batch's rows, as the
  // first program's tokens are split (rows under data parallelism, columns
  // under sequence parallelism). A pipeline rank whose stages read no
  // tokens still counts the step's.
  const sched::ProgramInput &input =
      executor.bundle().tokensProgram()->inputs[0];
  batch = runs.microbatches * input.type.shape[0];
  seq = input.type.shape[1];
  std::vector<int64_t> local = {batch, seq};
  std::vector<int64_t> global = mesh.globalShape(local, splitOf(input));
  globalBatch = global[0];
  globalSeq = global[1];
  start = mesh.blockStart(executor.rank(), local, splitOf(input));
  sequenceChunks = input.sequenceChunks;
  tokens.resize(batch * seq);
  labels.resize(batch * seq);
  // What the compiler counted for a step (the same every step).
  if (auto flops = executor.bundle().meta.find("step_flops");
      flops != executor.bundle().meta.end() && flops->is_object()) {
    modelFlops = flops->value("model", 0.0);
    hardwareFlops = flops->value("hardware", 0.0);
  }
}

absl::StatusOr<TrainLoop::Rows>
TrainLoop::readOwnRows(int64_t count, const ReadRow &read) const {
  int64_t m = runs.microbatches, rows = batch / m, globalRows = globalBatch / m;
  Rows out;
  out.tokens.resize(count * globalRows * globalSeq);
  out.labels.resize(count * globalRows * globalSeq);
  // The rows this rank feeds its programs: its block of each micro-batch.
  for (int64_t j = 0; j < count; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t row = j * globalRows + start[0] / m + r;
      if (absl::Status s = read(row, &out.tokens[row * globalSeq],
                                &out.labels[row * globalSeq]);
          !s.ok())
        return s;
    }
  return out;
}

absl::StatusOr<TrainLoop::Rows> TrainLoop::readRows(int64_t n) const {
  return readOwnRows(
      runs.microbatches, [&](int64_t row, int32_t *tokens, int32_t *labels) {
        return data.read(data.at((n - 1) * globalBatch + row), tokens, labels);
      });
}

void TrainLoop::cutOwnBlock(Rows &rows, int64_t count) {
  int64_t m = runs.microbatches, local = batch / m,
          globalRows = globalBatch / m;
  // Under context parallelism the program holds each sequence as chunks
  // 0, 2N-1, 1, 2N-2, ...: reorder before the blocks are cut.
  if (sequenceChunks > 0)
    for (std::vector<int32_t> *data : {&rows.tokens, &rows.labels})
      for (int64_t r = 0; r < count * globalRows; ++r)
        reorderChunks(data->data() + r * globalSeq, globalSeq, sequenceChunks,
                      reordered);
  // Micro-batch j is rows [j B/M, (j+1) B/M) of the step's global batch on
  // every plan, each rank taking its block of it: the same tokens meet in
  // one micro-batch whatever the ranks (a MoE model routes, and caps, each
  // micro-batch on its own).
  for (int64_t j = 0; j < count; ++j)
    forEachInBlock({local, seq}, {globalRows, globalSeq},
                   {start[0] / m, start[1]}, [&](int64_t i, int64_t g) {
                     tokens[j * local * seq + i] =
                         rows.tokens[j * globalRows * globalSeq + g];
                     labels[j * local * seq + i] =
                         rows.labels[j * globalRows * globalSeq + g];
                   });
}

void TrainLoop::resumeAt(int64_t done) {
  steps = done;
  // A read ahead for another step is of no use now.
  if (ahead.valid())
    ahead.wait();
  ahead = {};
}

absl::StatusOr<StepReport> TrainLoop::step() {
  int64_t n = steps + 1;
  auto waiting = std::chrono::steady_clock::now();
  absl::StatusOr<Rows> read =
      ahead.valid() && aheadStep == n ? ahead.get() : readRows(n);
  if (!read.ok())
    return read.status();
  global = std::move(*read);
  double dataWait =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting)
          .count();
  // The next step's batch is read while this one runs.
  aheadStep = n + 1;
  ahead = std::async(std::launch::async,
                     [this, next = n + 1] { return readRows(next); });
  cutOwnBlock(global, runs.microbatches);
  float lr = static_cast<float>(schedule.at(n)),
        stepNumber = static_cast<float>(n);
  auto start = std::chrono::steady_clock::now();
  absl::Status status = runTrainSteps(executor, runs, tokens.data(),
                                      labels.data(), lr, stepNumber);
  if (!status.ok())
    return status;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  steps = n;
  StepReport report;
  report.step = n;
  // The reporter ran last (trainSteps checked it is the schedule's last),
  // so its outputs are still in the arena.
  std::map<std::string, float> reported;
  std::vector<const char *> names = {"loss", "grad_norm"};
  if (runs.scalesLoss)
    names.insert(names.end(), {"loss_scale", "skipped"});
  for (const char *name : names) {
    absl::StatusOr<float> value = executor.scalarOutput(runs.reporter, name);
    if (!value.ok())
      return value.status();
    reported[name] = *value;
  }
  report.loss = reported["loss"];
  report.gradNorm = reported["grad_norm"];
  if (runs.scalesLoss) {
    report.lossScale = reported["loss_scale"];
    report.skipped = reported["skipped"] != 0;
  }
  report.lr = lr;
  report.seconds = seconds;
  report.dataWaitSeconds = dataWait;
  report.modelFlops = modelFlops;
  report.hardwareFlops = hardwareFlops;
  report.tokens = globalBatch * globalSeq;
  absl::StatusOr<std::vector<std::pair<std::string, std::vector<double>>>>
      probes = takeProbes(executor, runs.microbatches);
  if (!probes.ok())
    return probes.status();
  report.probes = std::move(*probes);
  for (std::vector<int64_t> &pairs : executor.takeRoutedPairs())
    if (std::any_of(pairs.begin(), pairs.end(),
                    [](int64_t n) { return n > 0; }))
      report.expertPairs.push_back(std::move(pairs));
  if (!std::isfinite(report.loss) && !nonFiniteOk)
    return absl::InternalError(
        absl::StrCat("step ", n, ": the loss is not finite (", report.loss,
                     "); lower --lr? (weft-run "
                     "--check-finite names the first "
                     "op that makes a NaN or "
                     "infinity)"));
  // A gradient norm past f32's range clips every update to nothing (or
  // NaN): the weights or the rate are out of range, and training on would
  // be noise.
  if (report.skipped && report.lossScale && *report.lossScale <= 1)
    return absl::InternalError(absl::StrCat(
        "step ", n, ": the gradients overflow even at loss scale ",
        *report.lossScale,
        ": the weights or activations are out of range; check the initial "
        "weights or lower --lr"));
  if (!std::isfinite(report.gradNorm) && !report.skipped && !nonFiniteOk)
    return absl::InternalError(absl::StrCat(
        "step ", n, ": the gradient norm is not finite (", report.gradNorm,
        "): weights or activations overflowed; check the "
        "initial weights or lower --lr (weft-run --check-finite names the "
        "first op that makes a NaN or infinity)"));
  return report;
}

absl::StatusOr<std::vector<std::pair<std::string, std::vector<double>>>>
takeProbes(SchedExecutor &executor, int64_t microbatches) {
  const sched::SchedBundle &bundle = executor.bundle();
  std::vector<const sched::Param *> list;
  size_t count = 0;
  bool staged = false;
  for (const sched::Param &p : bundle.params)
    if (p.probe) {
      // A probe is whole on the ranks that hold it (weft-probes assigns it
      // whole values); a split one would log one rank's block as the whole.
      if (p.split)
        return absl::InvalidArgumentError(
            "probe '" + *p.probe + "' (parameter '" + p.name +
            "') is split across ranks; the runtime logs whole probes only");
      list.push_back(&p);
      count += static_cast<size_t>(p.type.numElements());
      staged |= p.pipelineRank.has_value();
    }
  if (list.empty())
    return std::vector<std::pair<std::string, std::vector<double>>>{};
  // This rank's probes, in the bundle's order, zeros where it holds none
  // (another stage's), each zeroed for the next step once read.
  std::vector<float> mine(count, 0.0f);
  size_t at = 0;
  for (const sched::Param *p : list) {
    size_t n = static_cast<size_t>(p->type.numElements());
    if (executor.holds(*p)) {
      absl::StatusOr<std::vector<float>> held = executor.param(p->name);
      if (!held.ok())
        return held.status();
      std::copy(held->begin(), held->end(), mine.begin() + at);
      if (absl::Status s = executor.setParam(p->name, std::vector<float>(n));
          !s.ok())
        return s;
    }
    at += n;
  }
  // Under pp a stage's ranks alone hold its layers' probes: every rank
  // gathers every rank's, and takes each probe from the first rank of its
  // stage (its dp and tp replicas hold the same value).
  std::vector<float> all = mine;
  MeshSpec mesh;
  int ppAxis = -1;
  Communicator *comm = executor.communicator();
  if (staged && comm) {
    mesh = meshSpecOf(bundle);
    ppAxis = mesh.axisIndex("pp");
  }
  if (ppAxis >= 0) {
    all.resize(count * static_cast<size_t>(comm->worldSize()));
    if (absl::Status s = comm->allGather({}, mine.data(), all.data(), count);
        !s.ok())
      return s;
  }
  std::vector<std::pair<std::string, std::vector<double>>> probes;
  at = 0;
  for (const sched::Param *p : list) {
    size_t n = static_cast<size_t>(p->type.numElements());
    size_t from = 0;
    if (all.size() > count && p->pipelineRank)
      for (int64_t r = 0; r < comm->worldSize(); ++r)
        if (mesh.coords(r)[ppAxis] == *p->pipelineRank) {
          from = static_cast<size_t>(r) * count;
          break;
        }
    std::vector<double> value(all.begin() + from + at,
                              all.begin() + from + at + n);
    at += n;
    using Fold = sched::Param::ProbeFold;
    switch (p->probeFold) {
    case Fold::Mean:
    case Fold::Rms:
      for (double &v : value) {
        v /= static_cast<double>(microbatches);
        if (p->probeFold == Fold::Rms)
          v = std::sqrt(v);
      }
      break;
    case Fold::Max:
      value = {*std::max_element(value.begin(), value.end())};
      break;
    case Fold::MaxOverMean: {
      // The micro-batches' sums: their division cancels.
      double sum = std::accumulate(value.begin(), value.end(), 0.0);
      value = {sum > 0 ? *std::max_element(value.begin(), value.end()) *
                             static_cast<double>(value.size()) / sum
                       : 0.0};
      break;
    }
    case Fold::Last:
      break;
    }
    probes.emplace_back(*p->probe, std::move(value));
  }
  return probes;
}

absl::Status TrainLoop::checkEvaluate(const sched::SchedBundle &bundle) {
  const sched::Program *forward = bundle.program("forward");
  if (!forward)
    return absl::InvalidArgumentError(absl::StrCat(
        bundle.dir,
        ": --eval-data needs the whole model's 'forward' program, which this "
        "bundle does not have (pipelined bundles, --plan pp=..., have none "
        "yet: evaluate a --save checkpoint with a bundle compiled without "
        "pp)"));
  // check() has compared the shapes; the blocks must be cut alike too.
  const sched::ProgramInput &fed = bundle.tokensProgram()->inputs[0],
                            &in = forward->inputs[0];
  if (splitOf(fed) != splitOf(in) || fed.sequenceChunks != in.sequenceChunks)
    return absl::InvalidArgumentError(absl::StrCat(
        bundle.dir,
        ": --eval-data feeds the forward program as the train programs are "
        "fed, but program 'forward' splits its tokens differently from "
        "program '",
        bundle.tokensProgram()->name, "'"));
  return absl::OkStatus();
}

/// Window `w` of `heldOut`'s sources one after another, read into
/// `tokens` and `labels`.
static absl::Status readHeldOut(const std::vector<ShuffledWindows> &heldOut,
                                int64_t w, int32_t *tokens, int32_t *labels) {
  size_t d = 0;
  for (; d + 1 < heldOut.size() && w >= heldOut[d].size(); ++d)
    w -= heldOut[d].size();
  return heldOut[d].read(heldOut[d].inOrder(w), tokens, labels);
}

absl::StatusOr<int64_t>
TrainLoop::evalBatches(const std::vector<ShuffledWindows> &heldOut,
                       int64_t maxBatches) const {
  int64_t windows = 0;
  for (const ShuffledWindows &source : heldOut)
    windows += source.size();
  if (windows < globalBatch)
    return absl::InvalidArgumentError(absl::StrCat(
        "--eval-data holds ", windows, " windows of ", globalSeq + 1,
        " tokens; one evaluation batch (the job's) takes ", globalBatch));
  return maxBatches > 0 ? std::min(windows / globalBatch, maxBatches)
                        : windows / globalBatch;
}

absl::Status
TrainLoop::checkHeldOut(const std::vector<ShuffledWindows> &heldOut,
                        int64_t maxBatches) const {
  absl::StatusOr<int64_t> batches = evalBatches(heldOut, maxBatches);
  if (!batches.ok())
    return batches.status();
  // Every rank reads every window it will evaluate (ids are checked as
  // they are read), so all fail alike and none after training.
  std::vector<int32_t> tokens(globalSeq), labels(globalSeq);
  for (int64_t w = 0; w < *batches * globalBatch; ++w)
    if (absl::Status s = readHeldOut(heldOut, w, tokens.data(), labels.data());
        !s.ok())
      return s;
  return absl::OkStatus();
}

absl::StatusOr<EvalReport>
TrainLoop::evaluate(const std::vector<ShuffledWindows> &heldOut,
                    int64_t maxBatches) {
  auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<int64_t> batches = evalBatches(heldOut, maxBatches);
  if (!batches.ok())
    return batches.status();
  int64_t m = runs.microbatches, local = batch / m;
  double sum = 0;
  for (int64_t b = 0; b < *batches; ++b) {
    // Batch b is the windows [b B, (b + 1) B) cut as step's batch is, so
    // the windows and their grouping are the same on every plan.
    absl::StatusOr<Rows> read =
        readOwnRows(m, [&](int64_t row, int32_t *tokens, int32_t *labels) {
          return readHeldOut(heldOut, b * globalBatch + row, tokens, labels);
        });
    if (!read.ok())
      return read.status();
    cutOwnBlock(*read, m);
    for (int64_t j = 0; j < m; ++j) {
      int32_t *t = tokens.data() + j * local * seq,
              *l = labels.data() + j * local * seq;
      if (absl::Status s =
              executor.run("forward", {{{local, seq}, DType::I32, t},
                                       {{local, seq}, DType::I32, l}});
          !s.ok())
        return s;
      absl::StatusOr<float> loss = executor.scalarOutput("forward", "loss");
      if (!loss.ok())
        return loss.status();
      sum += *loss;
    }
  }
  // The forward's routing counts are not a step's (StepReport's
  // expertPairs).
  executor.takeRoutedPairs();
  EvalReport report;
  report.step = steps;
  report.loss = sum / static_cast<double>(*batches * m);
  report.batches = *batches;
  report.tokens = *batches * globalBatch * globalSeq;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  return report;
}

absl::StatusOr<std::vector<uint32_t>>
TrainLoop::sample(std::vector<uint32_t> context, int64_t count,
                  double temperature, uint64_t seed) {
  const sched::Program *forward = executor.bundle().program("forward");
  if (!forward)
    return absl::UnimplementedError(
        "sampling needs the whole model's forward program, which pipelined "
        "bundles (--plan pp=...) do not have yet; sample from the saved "
        "checkpoint with a bundle compiled without pp");
  const sched::ProgramInput &input = forward->inputs[0];
  Sharding split = splitOf(input);
  // Each rank continues the window in its own first row, which needs the
  // whole sequence on every rank.
  if (split.size() > 1 && !split[1].empty())
    return absl::UnimplementedError(
        "sampling from a bundle that splits the sequence (sp=on or cp) is "
        "not supported yet; sample from a checkpoint with a bundle compiled "
        "without them");
  const std::vector<int64_t> &shape = input.type.shape;
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
    int64_t rows = mesh.globalShape(shape, split)[0];
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

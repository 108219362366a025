//===- sched_executor_test.cpp - bundle v2 on N CPU ranks against one -----===//
//
// A model placed on several ranks (ranks as threads over Gloo) must train
// as the unplaced model does on one: the loss and gradient norm of each
// AdamW step, the forward program's loss and logits, and every parameter
// after three steps, gathered whole. The
// placements: dp (gradient all-reduce), ZeRO-3 (parameter all-gathers,
// gradient reduce-scatters, sharded optimizer state), Megatron tp with the
// vocabulary-parallel embedding and cross-entropy, and dp x tp. One rank
// against the reference evaluator is executor_test.cpp's. Also: checkpoint
// loading, and hand-written programs for what compiled models do not reach.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/BundleData.h"
#include "runtime/exec/SchedExecutor.h"
#include "test/runtime/TrainingJob.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

using namespace weft;
using testutil::Case;
using testutil::Trace;
using testutil::train;
using testutil::worstError;

namespace {
/// Trains bundle `dir` on every rank of its mesh.
std::vector<Trace> runBundle(const Case &setup, const std::string &dir,
                             const std::vector<std::string> &names) {
  auto bundle = runtime::sched::loadSchedBundle(dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok())
    return {};
  return testutil::runJob(
      setup, runtime::meshSpecOf(*bundle),
      [&](int64_t, runtime::Communicator *comm, int64_t first, int64_t rows,
          Trace &trace) {
        if (auto exec = testutil::openExecutor(dir, comm, trace))
          train(*exec, first, rows, setup.seq, names, trace);
      });
}

/// Elementwise agreement of FP8 runs whose GEMMs sum in other orders
/// (placed against one rank; FP8 codes against their dequantized values):
/// a value that lands on the other side of an E4M3 rounding boundary moves
/// by an eighth, and a few such flips per tensor move logits and, through
/// Adam, parameters by a few percent of their scale. Measured: under 1e-3
/// and 1e-2 with OpenBLAS's Zen and Haswell kernels, 2.3% (logits) and
/// 2.1% (parameters) with its SkylakeX kernels on an AVX-512 Xeon. A max
/// all-reduce of the scales run as a sum moves parameters by 0.4-0.9.
/// Losses, means over every token, stay within 1e-3.
constexpr double kFp8Elementwise = 5e-2;

/// The setup placed by its plan against the same model on one rank (with
/// `wholePlan`, e.g. its micro-batches), from the same seed and global
/// batches. Collectives sum in another order than one rank does: losses
/// and norms agree to `tolerance`, logits to `logitTolerance` (default:
/// `tolerance`) and parameters to `paramTolerance` of each tensor's scale.
void checkPlacedTraining(Case placed, double tolerance = 1e-4,
                         double paramTolerance = 1e-4,
                         const std::string &wholePlan = "",
                         std::optional<double> logitTolerance = std::nullopt) {
  SCOPED_TRACE(placed.label());
  // With eps 1e-8, a gradient that cancels to ~1e-10 (a key bias's is zero
  // in exact arithmetic) turns a different summation order into a full
  // +-lr step; 1e-4 keeps such noise small.
  placed.adamEps = 1e-4;
  Case whole = placed;
  whole.plan = wholePlan;
  std::string wholeDir = testutil::compileCase(whole),
              placedDir = testutil::compileCase(placed);
  ASSERT_FALSE(wholeDir.empty());
  ASSERT_FALSE(placedDir.empty());
  std::vector<std::string> names; // Parameters, not optimizer state.
  auto bundle = runtime::sched::loadSchedBundle(wholeDir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  for (const auto &p : bundle->params)
    if (!p.state)
      names.push_back(p.name);
  std::vector<Trace> one = runBundle(whole, wholeDir, names);
  std::vector<Trace> many = runBundle(placed, placedDir, names);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_GT(many.size(), placed.options().plan.worldSize() > 1 ? 1u : 0u);
  // With micro-batches the forward program takes one of them: its loss and
  // logits are not the whole batch's.
  bool sameForward = placed.microbatches() == 1;
  ASSERT_EQ(one[0].failure, "");
  const Trace &want = one[0];
  for (size_t r = 0; r < many.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Trace &got = many[r];
    ASSERT_EQ(got.failure, "");
    EXPECT_LE(worstError(want.losses, got.losses), tolerance);
    EXPECT_LE(worstError(want.norms, got.norms), tolerance);
    if (sameForward) {
      EXPECT_LE(worstError(want.forwardLoss, got.forwardLoss), tolerance);
      EXPECT_LE(worstError(want.logits, got.logits),
                logitTolerance.value_or(tolerance));
    }
    for (const std::string &name : names)
      EXPECT_LE(worstError(want.params.at(name), got.params.at(name)),
                paramTolerance)
          << name;
    EXPECT_EQ(got.params.size(), names.size());
  }
  EXPECT_GT(names.size(), 10u);
}
} // namespace

// Ranks as threads over Gloo: gradient all-reduces over dp; ZeRO-3's
// parameter all-gathers and gradient reduce-scatters; Megatron tp with the
// vocabulary-parallel embedding and cross-entropy; both axes at once
// (GPT-2's tp also slices replicated tensors with by_rank copies); a bf16
// model's f32 copies around its collectives.
// Gradient accumulation (weft-accumulate-gradients and the bundle's train
// schedule): M micro-batches, then one update, train as the whole batch
// does (3 AdamW steps; losses and gradient norms within 1e-5), on one rank
// and composed with dp, ZeRO-1 and ZeRO-3, and tp. Parameters agree within
// 5e-5 of their scale: GPT-2's first c_proj bias has a gradient that
// nearly cancels, and Adam's m / sqrt(v) turns the other summation order
// into 2.5e-5 there (every other tensor is within 1e-5).
TEST(SchedExecutor, MicrobatchesTrainLikeTheWholeBatch) {
  Case gpt2("gpt2-tiny", "f32", "microbatches=4");
  gpt2.batch = 8;
  checkPlacedTraining(gpt2, 1e-5, 5e-5);
  Case llama("llama-tiny", "f32", "mb=2");
  llama.batch = 4;
  checkPlacedTraining(llama, 1e-5, 1e-5);
}
TEST(SchedExecutor, MicrobatchesComposeWithDataParallelAndZero) {
  for (const char *plan :
       {"dp=2,microbatches=2", "dp=2,zero=1,mb=2", "dp=2,zero=3,mb=2"}) {
    Case c("gpt2-tiny", "f32", plan);
    c.batch = 8;
    checkPlacedTraining(c, 1e-5, 5e-5);
  }
}
TEST(SchedExecutor, MicrobatchesComposeWithTensorParallel) {
  Case c("llama-tiny", "f32", "tp=2,mb=2");
  c.batch = 4;
  checkPlacedTraining(c, 1e-5, 1e-5);
}
// Pipeline parallelism (weft-pipeline-assign-stages and -split): each of
// two ranks runs its stage's forward and backward per micro-batch in the
// schedule's order, activations and gradients crossing as send/recv, the
// forward's stash handed to its backward, then updates its own
// parameters; every gathered parameter, loss and gradient norm as on one
// rank. GPT-2's tied embedding crosses to the head's stage and its
// gradient comes back.
TEST(SchedExecutor, PipelineStagesTrainLikeOneRank) {
  for (const char *model : {"gpt2-tiny", "llama-tiny"})
    for (const char *plan :
         {"pp=2,mb=4,schedule=gpipe", "pp=2,mb=4,schedule=1f1b"}) {
      Case c(model, "f32", plan);
      c.batch = 8;
      checkPlacedTraining(c, 1e-5, 5e-5);
    }
}
// A stage's bf16 activations are handed to its backward as stored; a
// bundle whose taker stores a stash otherwise than its maker (an f32 value
// into a bf16 input would round) is refused when the schedule is read.
TEST(SchedExecutor, PipelineStashesKeepTheirElementType) {
  Case c("llama-tiny", "bf16", "pp=2,mb=2");
  c.batch = 4;
  auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(c));
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  // Rank 0 runs stage 0's forward (making the stash) and its backward.
  ASSERT_TRUE(runtime::trainSteps(*bundle, 0).ok());
  runtime::sched::Program *forward = nullptr;
  for (auto &p : bundle->programs)
    if (p.name == "stage0.forward")
      forward = &p;
  ASSERT_NE(forward, nullptr);
  int64_t retyped = 0;
  for (const auto &o : forward->outputs)
    if (o.name.rfind("stash.", 0) == 0 &&
        forward->buffers[o.buffer].type.dtype == runtime::DType::BF16) {
      forward->buffers[o.buffer].type.dtype = runtime::DType::F32;
      ++retyped;
    }
  ASSERT_GT(retyped, 0) << "stage 0 stashes nothing in bf16";
  auto steps = runtime::trainSteps(*bundle, 0);
  ASSERT_FALSE(steps.ok());
  EXPECT_THAT(std::string(steps.status().message()),
              testing::HasSubstr("program 'stage0.backward' takes stashed "
                                 "input"));
  EXPECT_THAT(std::string(steps.status().message()),
              testing::HasSubstr("as bf16, but the program before it for "
                                 "micro-batch 0 kept it as f32"));
}

// A pipeline rank runs its own stages' programs (and its step) only: the
// runtimes bind those, and hold no memory for the other ranks'.
TEST(SchedExecutor, PipelineRanksHoldTheirOwnPrograms) {
  Case c("gpt2-tiny", "f32", "pp=2,mb=2");
  auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(c));
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  std::vector<bool> first = runtime::programsOfRank(*bundle, 0),
                    second = runtime::programsOfRank(*bundle, 1);
  int own = 0;
  for (size_t i = 0; i < bundle->programs.size(); ++i) {
    const std::string &name = bundle->programs[i].name;
    SCOPED_TRACE(name);
    bool zero = name.rfind("stage0.", 0) == 0 || name.rfind("rank0.", 0) == 0;
    bool one = name.rfind("stage1.", 0) == 0 || name.rfind("rank1.", 0) == 0;
    own += zero || one;
    EXPECT_EQ(first[i], !one);
    EXPECT_EQ(second[i], !zero);
  }
  EXPECT_GE(own, 6); // Each rank's forward, backward and step.
  // Each rank's executor binds its own: rank 0 refuses to run stage 1's
  // forward or read its outputs, and its arena is the largest of its own
  // programs'.
  std::string dir = testutil::compileCase(c);
  std::vector<Trace> traces = testutil::runJob(
      c, runtime::meshSpecOf(*bundle),
      [&](int64_t r, runtime::Communicator *comm, int64_t, int64_t,
          Trace &trace) {
        auto exec = testutil::openExecutor(dir, comm, trace);
        if (!exec)
          return;
        std::vector<bool> mine = runtime::programsOfRank(exec->bundle(), r);
        int64_t largest = 0;
        for (size_t i = 0; i < mine.size(); ++i)
          if (mine[i])
            largest = std::max(largest, exec->bundle().programs[i].arena);
        if (exec->arenaBytes() != largest)
          trace.failure = "arena " + std::to_string(exec->arenaBytes()) +
                          " bytes, not " + std::to_string(largest);
        std::string other = r == 0 ? "stage1.forward" : "stage0.forward";
        absl::Status ran = exec->run(other, {});
        absl::StatusOr<float> read = exec->scalarOutput(other, "stash.0");
        for (const absl::Status &s : {ran, read.status()})
          if (std::string(s.message()).find("is another pipeline rank's") ==
              std::string::npos)
            trace.failure = other + ": " + std::string(s.message());
      });
  for (const Trace &t : traces)
    EXPECT_EQ(t.failure, "");
}

// A rank's programs share one arena, the largest of theirs (they run one
// at a time), not the sum: so an output is read before another program
// runs, and one read after is refused, naming the program that ran since.
TEST(SchedExecutor, ProgramsShareOneArena) {
  Case c("gpt2-tiny", "f32", "mb=2");
  std::string dir = testutil::compileCase(c);
  auto bundle = runtime::sched::loadSchedBundle(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  int64_t largest = 0, sum = 0;
  for (const auto &p : bundle->programs) {
    largest = std::max(largest, p.arena);
    sum += p.arena;
  }
  auto exec = runtime::SchedExecutor::create(std::move(*bundle), {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_EQ((*exec)->arenaBytes(), largest);
  EXPECT_LT(largest, sum);
  auto early = (*exec)->output("forward", "loss");
  ASSERT_FALSE(early.ok());
  EXPECT_THAT(std::string(early.status().message()),
              testing::HasSubstr("is gone: it has not run"));
  Trace trace;
  train(**exec, 0, c.batch, c.seq, {}, trace);
  ASSERT_EQ(trace.failure, "");
  // train() ends with the evaluation forward: its loss is there;
  // @accumulate's outputs are not.
  EXPECT_TRUE((*exec)->scalarOutput("forward", "loss").ok());
  const runtime::sched::Program *accumulate =
      (*exec)->bundle().program("accumulate");
  ASSERT_NE(accumulate, nullptr);
  ASSERT_FALSE(accumulate->outputs.empty());
  auto stale = (*exec)->output("accumulate", accumulate->outputs[0].name);
  ASSERT_FALSE(stale.ok());
  EXPECT_THAT(std::string(stale.status().message()),
              testing::HasSubstr("is gone: program forward ran since"));
}

namespace {
/// Four layers of `model`, batch 8, under each pipeline plan, against one
/// rank.
void checkFourLayerPipelines(const char *model,
                             std::initializer_list<const char *> plans) {
  for (const char *plan : plans) {
    Case c(model, "f32", plan);
    c.batch = 8;
    c.layers = 4;
    checkPlacedTraining(c, 1e-5, 5e-5);
  }
}
} // namespace

// Four layers: on four pipeline ranks (1F1B), and as interleaved 1F1B with
// two virtual stages on each of two ranks (stage s on rank s mod 2, so the
// activations go round the ranks twice).
TEST(SchedExecutor, DeeperAndInterleavedPipelinesTrainLikeOneRank) {
  checkFourLayerPipelines(
      "llama-tiny",
      {"pp=4,mb=4,schedule=1f1b", "pp=4,mb=4,schedule=gpipe",
       "pp=4,mb=4,schedule=zb-h1", "pp=2,mb=4,schedule=interleaved,virtual=2",
       "pp=2,dp=2,mb=2,schedule=zb-h1",
       // Each rank's two chunks reduce in their own backward_last.
       "pp=2,dp=2,mb=4,schedule=interleaved,virtual=2"});
  // Interleaved on four ranks: eight stages of one layer each.
  Case c("llama-tiny", "f32", "pp=4,mb=4,schedule=interleaved,virtual=2");
  c.batch = 8;
  c.layers = 8;
  checkPlacedTraining(c, 1e-5, 5e-5);
}
TEST(SchedExecutor, DataParallelOnTwoRanksTrainsLikeOneRank) {
  checkPlacedTraining(Case("gpt2-tiny", "f32", "dp=2"));
}
TEST(SchedExecutor, Zero3OnTwoRanksTrainsLikeOneRank) {
  checkPlacedTraining(Case("gpt2-tiny", "f32", "dp=2,zero=3"));
}
TEST(SchedExecutor, TensorParallelOnTwoRanksTrainsLikeOneRank) {
  checkPlacedTraining(Case("llama-tiny", "f32", "tp=2"));
}
TEST(SchedExecutor, MixtralZero3OnTwoRanksTrainsLikeOneRank) {
  checkPlacedTraining(Case("mixtral-tiny", "f32", "dp=2,zero=3"));
}
TEST(SchedExecutor, DataAndTensorParallelOnFourRanksTrainsLikeOneRank) {
  Case setup("gpt2-tiny", "f32", "dp=2,tp=2");
  setup.batch = 4;
  checkPlacedTraining(setup);
}
// Dropout stays split (dp's batch, tp's sequence-parallel activations and
// heads) and each rank draws its block of the global tensor's mask;
// micro-batches draw theirs of the step's (weft.dropout's and attention's
// `split` and `microbatch`). So every mask is the one-rank model's, element
// for element, and the ranks and micro-batches train as one rank with the
// whole batch does.
TEST(SchedExecutor, DropoutOnRanksAndMicrobatchesTrainsLikeOneRank) {
  for (const char *plan : {"dp=2", "dp=2,tp=2", "tp=2,sp=on", "microbatches=2",
                           "dp=2,microbatches=2"}) {
    Case setup("gpt2-tiny-dropout", "f32", plan);
    setup.batch = 4;
    checkPlacedTraining(setup, 1e-5, 5e-5);
  }
  // Under context parallelism: each ring block of attention draws its part
  // of the whole sequence's mask by the positions it holds, and weft.dropout
  // indexes the reordered sequence by them too.
  for (const char *model : {"llama-tiny-dropout", "gpt2-tiny-dropout"})
    checkPlacedTraining(Case(model, "f32", "cp=2"), 1e-5, 5e-5);
  // In a pipeline: each stage's forward, backward (attention's mask is
  // drawn again there) and W programs count their own runs as the
  // micro-batch, and every rank's step moves its own copy of the step
  // counter on; GPipe, 1F1B, zero-bubble and interleaved orders.
  checkFourLayerPipelines(
      "gpt2-tiny-dropout",
      {"pp=2,mb=4,schedule=gpipe", "pp=2,mb=4,schedule=1f1b",
       "pp=2,mb=4,schedule=zb-h1", "pp=2,mb=4,schedule=interleaved,virtual=2",
       "pp=2,dp=2,mb=2,schedule=1f1b"});
}
// FP8 weight GEMMs on dp x tp: tp's column-parallel weights are gathered
// for their quantization when a block spans the split (per-tensor scales),
// so every rank quantizes what one rank does. Partial sums in another
// order move an element across an FP8 rounding point now and then:
// losses and norms to 1e-3, parameters to 1e-2.
TEST(SchedExecutor, Fp8DataAndTensorParallelTrainsLikeOneRank) {
  for (const char *recipe : {"tensorwise", "tensorwise-delayed", "rowwise"}) {
    Case setup("gpt2-tiny", "f32", "dp=2,tp=2");
    setup.batch = 4;
    setup.fp8 = recipe;
    checkPlacedTraining(setup, 1e-3, kFp8Elementwise, "", kFp8Elementwise);
  }
  // Sequence parallelism gathers each norm's output along the sequence
  // for the column-parallel GEMMs: a row-wise or MXFP8 block lies inside a
  // rank's tokens, so partitioning quantizes each rank's own and gathers
  // the quantized values, the weight gradient's re-quantization (one
  // scale, or 32-token tiles, along the tokens) max all-reducing over tp.
  for (const char *recipe : {"rowwise", "mxfp8"}) {
    Case setup("gpt2-tiny", "f32", "tp=2,sp=on");
    setup.batch = 4;
    setup.fp8 = recipe;
    checkPlacedTraining(setup, 1e-3, kFp8Elementwise, "", kFp8Elementwise);
  }
  // ZeRO-3 under a pipeline, gathering per micro-batch: each stage
  // quantizes its weights' shards (a row-wise column's maxima max
  // all-reduced over dp), gathers them (c_attn's q, k and v slices each on
  // its own), and its backward gathers the quantized shard again.
  {
    Case setup("gpt2-tiny", "f32", "pp=2,dp=2,zero=3,mb=4,gather=microbatch");
    setup.batch = 8;
    setup.fp8 = "rowwise";
    checkPlacedTraining(setup, 1e-3, kFp8Elementwise, "mb=4", kFp8Elementwise);
  }
  // In a pipeline, delayed scaling's histories live on their weights'
  // stages, each stage folds its micro-batches' maxima into the step's
  // (in its forward and backward programs) and its rank's step records
  // them, as one rank running the same four micro-batches does (the first
  // step quantizes each micro-batch by its own maximum, the histories
  // being empty, so one rank without micro-batches differs).
  for (const char *plan :
       {"pp=2,mb=4,schedule=1f1b", "pp=2,mb=4,schedule=zb-h1"}) {
    Case setup("gpt2-tiny", "f32", plan);
    setup.batch = 8;
    setup.layers = 4;
    setup.fp8 = "tensorwise-delayed";
    checkPlacedTraining(setup, 1e-3, kFp8Elementwise, "mb=4", kFp8Elementwise);
    // Each history (and its step maximum) is held by its weight's rank.
    auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(setup));
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    int histories = 0;
    for (const auto &p : bundle->params) {
      size_t at = p.name.find(".fp8");
      if (at == std::string::npos)
        continue;
      const auto *weight = bundle->param(p.name.substr(0, at));
      ASSERT_NE(weight, nullptr) << p.name;
      EXPECT_EQ(p.pipelineRank, weight->pipelineRank) << p.name;
      ++histories;
    }
    EXPECT_GT(histories, 0);
  }
}
// ZeRO-3 gathered once a step for its micro-batches (gather=step, the
// default with micro-batches and under pp): @gather quantizes each weight
// read only by one FP8 quantization on its shard, by maxima max
// all-reduced over dp (delayed scaling's history read there, and the
// weight's maximum folded into the step's there), gathers the quantized
// values into `<name>.fp8.gathered` with their maxima, and every
// micro-batch quantizes that state again by those maxima, which gives the
// same values. GPT-2's c_attn is sliced into q, k and v first: three
// states of a third each. Row-wise (two layouts, more than the values)
// keeps its values state.
TEST(SchedExecutor, Fp8Zero3GatheredOncePerStepTrainsLikeOneRank) {
  // GPT-2 on two stages of two ZeRO-3 ranks, four micro-batches, against
  // one rank running them.
  auto check = [](const char *recipe, const char *storage,
                  const char *recompute = "none") {
    Case setup("gpt2-tiny", "f32", "pp=2,dp=2,zero=3,mb=4");
    setup.batch = 8;
    setup.fp8 = recipe;
    setup.fp8Storage = storage;
    setup.recompute = recompute;
    checkPlacedTraining(setup, 1e-3, kFp8Elementwise, "mb=4", kFp8Elementwise);
    return setup;
  };
  // The quantized states, and c_attn's values states.
  auto states = [](const Case &setup) {
    std::pair<int, int> counts;
    auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(setup));
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    if (!bundle.ok())
      return counts;
    auto has = [](const std::string &s, const char *part) {
      return s.find(part) != std::string::npos;
    };
    for (const auto &p : bundle->params) {
      if (!has(p.name, ".gathered") || has(p.name, ".amax.gathered"))
        continue;
      if (has(p.name, ".fp8"))
        ++counts.first;
      else if (has(p.name, "attn.c_attn.weight"))
        ++counts.second;
    }
    return counts;
  };
  // Two layers of c_attn's three slices, c_proj, c_fc and the MLP's
  // c_proj.
  for (const char *recipe : {"tensorwise", "tensorwise-delayed", "rowwise"}) {
    bool rowwise = std::string(recipe) == "rowwise";
    EXPECT_EQ(states(check(recipe, "auto")),
              std::make_pair(rowwise ? 0 : 12, rowwise ? 2 : 0))
        << recipe;
  }
  // Full recomputation recomputes each layer's forward in the backward,
  // which reads the weight's one quantization (quantizations alike merge:
  // gather-per-step-fp8-twice.mlir): still one state each.
  EXPECT_EQ(states(check("tensorwise", "auto", "full")), std::make_pair(12, 0));
  // With FP8 storage, @gather moves the codes (sched.fp8_encode on the
  // CPU, each rank's rank<r>.gather its stage's six weights) and the state
  // holds them as FP8, decoding none. Under pp a stage's forward stashes
  // the quantized weight for its backward, so it decodes the state there;
  // without pp (and 16 tokens a rank and micro-batch, so that the GEMMs
  // are FP8's) the micro-batch's GEMMs read the held codes, their scales
  // from the held maxima (sched.fp8_scale_inv), and nothing is decoded.
  using runtime::sched::Op;
  struct Counts {
    int heldStates = 0, gatherDecodes = 0, decodes = 0, scaleInvs = 0;
  };
  auto count = [](const Case &setup) {
    Counts c;
    auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(setup));
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    if (!bundle.ok())
      return c;
    for (const auto &p : bundle->params)
      c.heldStates += p.name.find(".gathered") != std::string::npos &&
                      runtime::isFp8(p.type.dtype);
    for (const auto &program : bundle->programs)
      for (const auto &ins : program.instructions) {
        bool gather = program.name.find("gather") != std::string::npos;
        c.gatherDecodes += gather && ins.op == Op::Fp8Decode;
        c.decodes += ins.op == Op::Fp8Decode;
        c.scaleInvs += ins.op == Op::Fp8ScaleInv;
      }
    return c;
  };
  Counts pp = count(check("tensorwise", "on"));
  EXPECT_EQ(pp.heldStates, 2 * 6);
  EXPECT_EQ(pp.gatherDecodes, 0);
  EXPECT_EQ(pp.decodes, 2 * 6);
  Case direct("gpt2-tiny", "f32", "dp=2,zero=3,mb=4");
  direct.batch = 8;
  direct.seq = 16;
  direct.fp8 = "tensorwise";
  direct.fp8Storage = "on";
  checkPlacedTraining(direct, 1e-3, kFp8Elementwise, "mb=4", kFp8Elementwise);
  Counts dp = count(direct);
  EXPECT_EQ(dp.heldStates, 2 * 6);
  EXPECT_EQ(dp.decodes, 0);
  EXPECT_EQ(dp.scaleInvs, 2 * 6);
  // Row-wise: the forward's and the input gradient's blocks each get a
  // state, which FP8 storage holds as codes (a byte an element each, no
  // more than the values): two states a weight view, each read by its
  // GEMMs with scales from its maxima, the input gradient's through a
  // transposing copy.
  // Its norms differ from one rank's by 1.2e-3 (relative), as much as
  // with gather=microbatch, which holds nothing: FP8 GEMMs on each rank's
  // tokens, not holding codes.
  direct.fp8 = "rowwise";
  checkPlacedTraining(direct, 2e-3, kFp8Elementwise, "mb=4", kFp8Elementwise);
  Counts rows = count(direct);
  EXPECT_EQ(rows.heldStates, 2 * 2 * 6);
  EXPECT_EQ(rows.decodes, 0);
  EXPECT_EQ(rows.scaleInvs, 2 * 2 * 6);
}
// bf16 values: each rank rounds its partial sums to bf16 before the
// all-reduce sums them in f32, where one rank rounds the whole: losses,
// norms and logits to a few bf16 ulps. Adam then moves a parameter whose
// gradient is at that noise level (an embedding row no token used) by
// about lr a step whatever the noise's size: parameters to 10%.
TEST(SchedExecutor, Bf16TensorParallelOnTwoRanksTrainsLikeOneRank) {
  checkPlacedTraining(Case("llama-tiny", "bf16", "tp=2"), 1.0 / 32, 1e-1);
}
// ZeRO-3 in bf16: each parameter's bf16 copy is cast on its shard and
// gathered as stored (two bytes an element, moved as bytes), so every rank
// computes with the bf16 values one rank does; the gradients'
// reduce-scatter sums partial bf16 sums in f32 as tp's all-reduce does.
TEST(SchedExecutor, Bf16Zero3GathersBf16AndTrainsLikeOneRank) {
  Case setup("llama-tiny", "bf16", "dp=2,zero=3");
  checkPlacedTraining(setup, 1.0 / 32, 1e-1);
  auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(setup));
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  int bf16Gathers = 0, f32Gathers = 0;
  for (const auto &p : bundle->programs)
    for (const auto &ins : p.instructions)
      if (ins.op == runtime::sched::Op::Collective &&
          ins.as<runtime::sched::CollectiveAttrs>().kind ==
              runtime::sched::CollectiveKind::AllGather)
        ++(p.buffers[ins.operands[0]].type.dtype == runtime::DType::BF16
               ? bf16Gathers
               : f32Gathers);
  EXPECT_GT(bf16Gathers, 0);
  EXPECT_EQ(f32Gathers, 0);
}

// A bf16 model's gradients with data parallelism and micro-batches
// (ZeRO-0): each micro-batch adds its widened local gradient to an f32
// accumulator, and the last micro-batch's program (@accumulate_last; with
// a pipeline, each stage's backward_last) all-reduces each f32 sum once,
// under the rest of its backward; the update reduces nothing. One rank
// rounds its whole batch's gradient to bf16 once where these round each
// micro-batch's: a few bf16 ulps, as tp.
TEST(SchedExecutor, Bf16MicrobatchGradientsAreReducedOnceInF32) {
  for (const char *plan : {"dp=2,mb=2", "pp=2,dp=2,mb=2"}) {
    Case setup("llama-tiny", "bf16", plan);
    setup.batch = 4;
    checkPlacedTraining(setup, 1.0 / 32, 1e-1);
    auto bundle = runtime::sched::loadSchedBundle(testutil::compileCase(setup));
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    auto isLast = [](const std::string &name) {
      return name == "accumulate_last" ||
             llvm::StringRef(name).ends_with("_last");
    };
    int lastPrograms = 0;
    for (const auto &p : bundle->programs) {
      int gradients = 0;
      for (const auto &ins : p.instructions) {
        if (ins.op != runtime::sched::Op::Collective ||
            ins.as<runtime::sched::CollectiveAttrs>().kind !=
                runtime::sched::CollectiveKind::AllReduce)
          continue;
        const auto &type = p.buffers[ins.operands[0]].type;
        EXPECT_EQ(type.dtype, runtime::DType::F32)
            << plan << ": " << p.name << " all-reduces bf16";
        // Elsewhere only scalars (the loss, the norm) are reduced.
        if (type.numElements() > 1)
          ++gradients;
      }
      if (isLast(p.name)) {
        ++lastPrograms;
        EXPECT_GT(gradients, 0) << plan << ": " << p.name;
      } else {
        EXPECT_EQ(gradients, 0)
            << plan << ": " << p.name << " reduces gradients";
      }
    }
    // One program, or each stage's backward.
    EXPECT_EQ(lastPrograms, llvm::StringRef(plan).starts_with("pp") ? 2 : 1)
        << plan;
  }
}

// Delayed scaling keeps what it promises: after three steps each amax
// history holds three maxima, newest first, and zeros after them; a weight's
// maximum moves by what AdamW's steps allow; the first step quantizes as
// current scaling does (the history is empty: the same loss to the bit),
// later ones by the history (another loss, not far off).
namespace {
/// `setup` trained on one rank, gathering the parameters `keep` names.
Trace trainOneRank(const Case &setup,
                   const std::function<bool(const std::string &, bool)> &keep) {
  std::string dir = testutil::compileCase(setup);
  EXPECT_FALSE(dir.empty());
  auto bundle = runtime::sched::loadSchedBundle(dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  std::vector<std::string> names;
  for (const auto &p : bundle->params)
    if (keep(p.name, p.state))
      names.push_back(p.name);
  auto exec = runtime::SchedExecutor::create(std::move(*bundle), {});
  EXPECT_TRUE(exec.ok()) << exec.status();
  Trace trace;
  train(**exec, 0, setup.batch, setup.seq, names, trace);
  EXPECT_EQ(trace.failure, "");
  return trace;
}
} // namespace

// FP8 GEMMs proper on the CPU (--fp8-storage on: sched.fp8_cast's codes,
// sched.gemm with FP8 operands and scales, as the GPU runs them) train as
// the dequantized f32 values do, on one rank and on dp x tp: the scales
// multiply after the sum instead of before, an ulp apart, which moves an
// element across an FP8 rounding point now and then.
TEST(SchedExecutor, Fp8StorageTrainsLikeTheDequantizedValues) {
  auto fp8Gemms = [](const Case &setup) {
    std::string dir = testutil::compileCase(setup);
    auto bundle = runtime::sched::loadSchedBundle(dir);
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    int gemms = 0;
    if (bundle.ok())
      for (const auto &program : bundle->programs)
        for (const auto &ins : program.instructions)
          gemms += ins.op == runtime::sched::Op::Gemm &&
                   ins.as<runtime::sched::GemmAttrs>().hasScales;
    return gemms;
  };
  // bf16: the values path rounds the dequantized values to bf16 again, the
  // FP8 GEMM reads the codes and scales (the cast is elided): operands a
  // bf16 ulp apart, which flip E5M2 gradient roundings (a quarter of a
  // value each) and, through Adam, the sign of small updates. The losses
  // agree to 1e-2; the parameters are not compared.
  for (auto [recipe, dtype, tolerance] :
       {std::tuple{"tensorwise", "f32", 1e-3},
        std::tuple{"tensorwise-delayed", "f32", 1e-3},
        std::tuple{"tensorwise", "bf16", 1e-2}}) {
    Case stored("gpt2-tiny", dtype);
    stored.fp8 = recipe;
    stored.fp8Storage = "on";
    Case values = stored;
    values.fp8Storage = "off";
    // Each of the two layers' six weight GEMMs (q, k, v, the attention's
    // and the MLP's two projections), forward and backward (two
    // products) in @step and forward in @forward: the LM head stays f32.
    EXPECT_EQ(fp8Gemms(stored), 2 * 6 * 3 + 2 * 6) << recipe;
    EXPECT_EQ(fp8Gemms(values), 0) << recipe;
    auto all = [](const std::string &, bool state) { return !state; };
    Trace got = trainOneRank(stored, all), want = trainOneRank(values, all);
    ASSERT_EQ(got.losses.size(), want.losses.size());
    for (size_t s = 0; s < want.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], want.losses[s], tolerance * want.losses[s])
          << recipe << " " << dtype << " step " << s + 1;
    if (std::string(dtype) == "f32")
      for (const auto &[name, w] : want.params)
        EXPECT_LE(testutil::worstError(w, got.params.at(name)), kFp8Elementwise)
            << recipe << " " << name;
  }
  // Block scales, as cuBLASLt's scale modes read them: row-wise (outer
  // vectors) on Llama-tiny; DeepSeek-V3's 1 x 128 tiles and 128 x 128
  // blocks on a 128-wide GPT over 128-token rows, whose weight gradients
  // read 1 x 128 tiles of x and the output gradient along the tokens
  // (Fp8Scaling.h's layouts). Every weight GEMM runs on codes and scales;
  // the CPU multiplies each element by its block's scale before the sum
  // (code x 1/s where the values path has q / s: an ulp apart). Block-wise
  // quantizes every gradient in E4M3 tiles, so such an ulp flips a
  // rounding (1/16 of an element) more often, and through Adam the sign of
  // small updates: its losses agree to 1e-3, its parameters are not
  // compared (EmulatedGpu.BlockScaledFp8GemmsMatchTheDequantizedValues
  // checks each GEMM form to 1e-5).
  for (auto [model, recipe, seq, layers, gemms] :
       {std::tuple{"llama-tiny", "rowwise", 8, 0, 2 * 7 * 3 + 2 * 7},
        std::tuple{"gpt2-demo", "blockwise", 128, 1, 6 * 3 + 6}}) {
    Case stored(model, "f32");
    stored.fp8 = recipe;
    stored.fp8Storage = "on";
    stored.seq = seq;
    stored.layers = layers;
    Case values = stored;
    values.fp8Storage = "off";
    EXPECT_EQ(fp8Gemms(stored), gemms) << recipe;
    EXPECT_EQ(fp8Gemms(values), 0) << recipe;
    auto all = [](const std::string &, bool state) { return !state; };
    Trace got = trainOneRank(stored, all), want = trainOneRank(values, all);
    ASSERT_EQ(got.losses.size(), want.losses.size());
    for (size_t s = 0; s < want.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], want.losses[s], 1e-3 * want.losses[s])
          << recipe << " step " << s + 1;
    if (std::string(recipe) == "rowwise")
      for (const auto &[name, w] : want.params)
        EXPECT_LE(testutil::worstError(w, got.params.at(name)), kFp8Elementwise)
            << recipe << " " << name;
  }
  // dp x tp, and ZeRO-3, whose weight shards are quantized before the
  // gather (weft-fp8-gather) and move as FP8 codes; delayed scaling
  // records the all-reduced maximum of the shards.
  for (const char *plan : {"dp=2,tp=2", "dp=2,zero=3"})
    for (const char *recipe : {"tensorwise", "tensorwise-delayed"}) {
      Case placed("gpt2-tiny", "f32", plan);
      placed.batch = 4;
      placed.fp8 = recipe;
      placed.fp8Storage = "on";
      checkPlacedTraining(placed, 1e-3, kFp8Elementwise, "", kFp8Elementwise);
    }
  // ZeRO-3 gathering once a step for its micro-batches keeps its f32
  // gathers (weft-fp8-gather leaves parameters to weft-gather-per-step),
  // against one rank with the same micro-batches.
  Case perStep("gpt2-tiny", "f32", "dp=2,zero=3,mb=2");
  perStep.batch = 8;
  perStep.fp8 = "tensorwise";
  perStep.fp8Storage = "on";
  checkPlacedTraining(perStep, 1e-3, kFp8Elementwise, "mb=2", kFp8Elementwise);
}

TEST(SchedExecutor, Fp8DelayedScalingRecordsEachStepsMaxima) {
  Case delayed("gpt2-tiny");
  delayed.fp8 = "tensorwise-delayed";
  Case current = delayed;
  current.fp8 = "tensorwise";
  Trace got =
      trainOneRank(delayed, [](const std::string &, bool) { return true; });
  Trace want = trainOneRank(
      current, [](const std::string &, bool state) { return !state; });
  ASSERT_EQ(got.losses.size(), 3u);
  EXPECT_EQ(got.losses[0], want.losses[0]);
  EXPECT_NE(got.losses[2], want.losses[2]);
  EXPECT_NEAR(got.losses[2], want.losses[2], 0.02 * want.losses[2]);
  int histories = 0;
  for (const auto &[name, h] : got.params) {
    if (name.find("_amax_history") == std::string::npos)
      continue;
    ++histories;
    ASSERT_EQ(h.size(), 16u) << name;
    for (int i = 0; i < 3; ++i)
      EXPECT_GT(h[i], 0.0f) << name << "[" << i << "]";
    for (size_t i = 3; i < h.size(); ++i)
      EXPECT_EQ(h[i], 0.0f) << name << "[" << i << "]";
    // Adam moves an element by about lr (3e-3) a step: the weight's
    // maximum two steps apart, by no more than that twice over.
    if (name.find("weight_amax_history") != std::string::npos)
      EXPECT_NEAR(h[0], h[2], 2.5 * 3e-3) << name;
  }
  // Two layers x 6 GEMMs (q, k, v, c_proj, c_fc, mlp c_proj) x 3 tensors.
  EXPECT_EQ(histories, 36);
}

// Delayed scaling under gradient accumulation and under recomputation: a
// history still gets one maximum a step (three after three steps, not one
// per micro-batch or per recomputed clone), and with micro-batches it is
// the whole batch's: the first step's weight maxima, and the maxima of
// layer 0's inputs (ln_1 of the embeddings, before any quantization), equal
// the unsplit run's to the bit (recomputed, every maximum is). Later steps
// quantize by the same histories up to FP8 noise: losses within 2%.
TEST(SchedExecutor, Fp8DelayedScalingRecordsOneMaximumAStep) {
  auto run = [](const Case &setup) {
    return trainOneRank(setup, [](const std::string &name, bool) {
      const std::string suffix = "_amax_history"; // Not its ".step_max".
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
                 0;
    });
  };
  Case whole("gpt2-tiny");
  whole.batch = 4;
  whole.fp8 = "tensorwise-delayed";
  Case micro = whole, recomputed = whole;
  micro.plan = "microbatches=2";
  recomputed.recompute = "full";
  Trace want = run(whole);
  for (const Case &setup : {micro, recomputed}) {
    SCOPED_TRACE(setup.label());
    Trace got = run(setup);
    ASSERT_EQ(got.losses.size(), 3u);
    EXPECT_NEAR(got.losses[2], want.losses[2], 0.02 * want.losses[2]);
    ASSERT_EQ(got.params.size(), 36u);
    for (const auto &[name, h] : got.params) {
      ASSERT_EQ(h.size(), 16u) << name;
      for (int i = 0; i < 3; ++i)
        EXPECT_GT(h[i], 0.0f) << name << "[" << i << "]";
      for (size_t i = 3; i < h.size(); ++i)
        EXPECT_EQ(h[i], 0.0f) << name << "[" << i << "]";
      bool exact = name.find("weight_amax_history") != std::string::npos ||
                   (name.find("h.0.attn.c_attn") != std::string::npos &&
                    name.find("input_amax_history") != std::string::npos);
      if (exact)
        EXPECT_EQ(h[2], want.params.at(name)[2]) << name;
      // Recomputation changes no value: every history to the bit.
      if (setup.recompute != "none")
        EXPECT_EQ(h, want.params.at(name)) << name;
    }
  }
}

namespace {
/// A Case for the checkpoint and hand-written tests' compiled bundle.
std::string compileLlama() { return testutil::compileCase(Case("llama-tiny")); }
} // namespace

// A checkpoint of trained parameters and state loads back to the bit over
// a differently initialised executor; a missing parameter is named.
TEST(SchedExecutor, LoadsACheckpoint) {
  std::string dir = compileLlama();
  ASSERT_FALSE(dir.empty());
  auto open = [&]() {
    auto bundle = runtime::sched::loadSchedBundle(dir);
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    return runtime::SchedExecutor::create(std::move(*bundle), {});
  };
  auto trained = open();
  ASSERT_TRUE(trained.ok()) << trained.status();
  std::vector<std::string> names;
  for (const auto &p : (*trained)->bundle().params)
    names.push_back(p.name);
  Trace trace;
  train(**trained, 0, 2, 8, names, trace);
  ASSERT_EQ(trace.failure, "");
  std::vector<runtime::TensorToWrite> tensors;
  for (const auto &p : (*trained)->bundle().params) {
    const std::vector<float> &v = trace.params.at(p.name);
    tensors.push_back({p.name, runtime::DType::F32, p.type.shape,
                       std::vector<double>(v.begin(), v.end())});
  }
  std::string path = testutil::uniqueTempPath("checkpoint.safetensors");
  ASSERT_TRUE(runtime::writeSafetensors(path, tensors).ok());
  auto file = runtime::SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto loaded = open();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  (*loaded)->initialize(77);
  ASSERT_TRUE((*loaded)->load(*file, /*requireAll=*/true).ok());
  for (const std::string &name : names)
    EXPECT_EQ(worstError(trace.params.at(name), *(*loaded)->param(name)), 0)
        << name;
  tensors.erase(tensors.begin());
  ASSERT_TRUE(runtime::writeSafetensors(path, tensors).ok());
  absl::Status missing =
      (*loaded)->load(*runtime::SafetensorsFile::read(path), true);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no tensor named '" + names.front() + "'"),
            std::string::npos)
      << missing;
}

namespace {
/// A one-program bundle written by hand (no kernel library), for what the
/// compiled models do not reach.
absl::StatusOr<std::unique_ptr<runtime::SchedExecutor>>
handWritten(const std::string &manifest,
            runtime::Communicator *comm = nullptr) {
  std::string dir = testutil::uniqueTempPath("hand-v2");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/manifest.json") << manifest;
  auto bundle = runtime::sched::loadSchedBundle(dir);
  if (!bundle.ok())
    return bundle.status();
  runtime::SchedExecutor::Options options;
  options.comm = comm;
  return runtime::SchedExecutor::create(std::move(*bundle), options);
}
} // namespace

// A transposing copy that rounds to bf16 (ties to even), a max over a
// dimension given a GPU scratch (which the CPU ignores), a fill, and an
// event pair that does nothing on one stream.
TEST(SchedExecutor, RunsCopiesReductionsAndFillsAsWritten) {
  auto exec = handWritten(R"json({
 "format": "weft-bundle", "version": 2, "meta": {}, "kernels": {},
 "params": [], "constants": [], "kernel_decls": [],
 "programs": [
  {"name": "p", "arena": 192, "align": 64, "events": 1,
   "streams": ["compute", "comm"],
   "inputs": [{"shape": [2, 3], "dtype": "f32"}],
   "buffers": [
    {"kind": "input", "index": 0, "shape": [2, 3], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 0, "last": 5, "shape": [3, 2], "dtype": "bf16"},
    {"kind": "alloc", "offset": 64, "first": 1, "last": 5, "shape": [3], "dtype": "f32"},
    {"kind": "alloc", "offset": 128, "first": 4, "last": 5, "shape": [2], "dtype": "f32"},
    {"kind": "alloc", "offset": 128, "first": 1, "last": 1, "shape": [6], "dtype": "f32"}],
   "instructions": [
    {"op": "copy", "stream": "compute", "operands": [0, 1],
     "sizes": [3, 2], "src": [0, 1, 3], "dst": [0, 2, 1]},
    {"op": "reduce", "stream": "compute", "operands": [0, 2, 4],
     "reduction": "max", "dims": [0], "has_scratch": true},
    {"op": "record", "stream": "compute", "operands": [], "event": 0},
    {"op": "wait", "stream": "comm", "operands": [], "event": 0},
    {"op": "fill", "stream": "comm", "operands": [3], "value": 2.5}],
   "assigns": [],
   "outputs": [{"name": "t", "buffer": 1}, {"name": "m", "buffer": 2},
               {"name": "f", "buffer": 3}]}],
 "schedules": []
})json");
  ASSERT_TRUE(exec.ok()) << exec.status();
  // 1 + 2^-8 and 1 + 3 * 2^-8 are halfway between bf16 neighbours.
  std::vector<float> x = {1.00390625f, -2, 3, 1.01171875f, 5, -6};
  ASSERT_TRUE(
      (*exec)->run("p", {{{2, 3}, runtime::DType::F32, x.data()}}).ok());
  EXPECT_EQ(*(*exec)->output("p", "t"),
            (std::vector<float>{1, 1.015625f, -2, 5, 3, -6}));
  EXPECT_EQ(*(*exec)->output("p", "m"),
            (std::vector<float>{1.01171875f, 5, 3}));
  EXPECT_EQ(*(*exec)->output("p", "f"), (std::vector<float>{2.5f, 2.5f}));
  // The caller's input is checked against the program's.
  absl::Status wrong =
      (*exec)->run("p", {{{3, 2}, runtime::DType::F32, x.data()}});
  EXPECT_NE(wrong.message().find("input 0 has the wrong shape"),
            std::string::npos)
      << wrong;
}

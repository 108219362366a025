//===- recompute_test.cpp - recomputation changes memory, not values ------===//
//
// weft-recompute's clones are the forward's ops on the forward's inputs, so
// every policy must train bit for bit as no recomputation does: the
// training step's loss and every gradient (@train_step), three AdamW steps'
// losses, gradient norms and parameters, and the forward program's logits,
// on one rank and on dp=2 x tp=2 (ranks as threads over Gloo). And what it
// records per layer must be what Korthikanti et al.'s derivation gives for
// the tensors Weft stores (docs/recompute.md has the table).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "frontend/models/ModelConfig.h"
#include "passes/costmodel/Report.h"
#include "passes/recompute/Budget.h"
#include "passes/recompute/Passes.h"
#include "passes/sharding/Passes.h"
#include "runtime/exec/BundleData.h"
#include "runtime/exec/SchedExecutor.h"
#include "test/passes/recompute/BudgetBruteForce.h"
#include "test/runtime/TrainingJob.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>

using namespace weft;
using testutil::Case;
using testutil::Trace;
using testutil::worstError;

namespace {
/// Every output of @train_step on one batch, by name, then the trace of a
/// few steps; on every rank of the bundle's mesh.
struct Run {
  std::map<std::string, std::vector<float>> gradients; // Rank 0's.
  std::vector<Trace> traces;
};

Run runCase(const Case &setup) {
  Run run;
  std::string dir = testutil::compileCase(setup);
  EXPECT_FALSE(dir.empty());
  auto bundle = runtime::sched::loadSchedBundle(dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok())
    return run;
  std::vector<std::string> names;
  for (const auto &p : bundle->params)
    if (!p.state)
      names.push_back(p.name);
  run.traces = testutil::runJob(
      setup, runtime::meshSpecOf(*bundle),
      [&](int64_t r, runtime::Communicator *comm, int64_t first, int64_t rows,
          Trace &trace) {
        std::unique_ptr<runtime::SchedExecutor> exec =
            testutil::openExecutor(dir, comm, trace);
        if (!exec)
          return;
        if (setup.keepGradients) {
          exec->initialize(5);
          std::vector<int32_t> tokens = testutil::tokenIds(0, first, rows,
                                                           setup.seq, 3),
                               labels = testutil::tokenIds(0, first, rows,
                                                           setup.seq, 1);
          std::vector<runtime::HostTensor> in = {
              {{rows, setup.seq}, runtime::DType::I32, tokens.data()},
              {{rows, setup.seq}, runtime::DType::I32, labels.data()}};
          if (absl::Status s = exec->run("train_step", in); !s.ok()) {
            trace.failure = std::string(s.message());
            return;
          }
          for (const auto &o : exec->bundle().program("train_step")->outputs) {
            auto value = exec->output("train_step", o.name);
            if (r == 0 && value.ok())
              run.gradients[o.name] = *value;
          }
        }
        testutil::train(*exec, first, rows, setup.seq, names, trace);
      });
  return run;
}

/// `setup` with each policy against no recomputation: equal bits. The
/// policies: full, selective, and a policy per layer (the tiny models
/// have two), as a budget resolves to; one per tensor too, which keeps
/// candidate 1 (GPT-2's first GEMM) that the recomputed candidate 2 reads.
void checkPolicies(Case setup) {
  setup.adamEps = 1e-4;
  Run none = runCase(setup);
  ASSERT_FALSE(none.traces.empty());
  if (setup.keepGradients)
    EXPECT_GT(none.gradients.size(), 10u);
  for (const char *policy :
       {"full", "selective", "full*1,selective*1", "tensors:0+2+3,full"}) {
    SCOPED_TRACE(setup.label() + " recompute=" + policy);
    Case recomputed = setup;
    recomputed.recompute = policy;
    Run got = runCase(recomputed);
    ASSERT_EQ(got.traces.size(), none.traces.size());
    for (size_t r = 0; r < got.traces.size(); ++r) {
      const Trace &want = none.traces[r], &have = got.traces[r];
      ASSERT_EQ(want.failure, "");
      ASSERT_EQ(have.failure, "");
      EXPECT_EQ(worstError(want.losses, have.losses), 0) << "rank " << r;
      EXPECT_EQ(worstError(want.norms, have.norms), 0) << "rank " << r;
      EXPECT_EQ(worstError(want.logits, have.logits), 0) << "rank " << r;
      for (const auto &[name, values] : want.params)
        EXPECT_EQ(worstError(values, have.params.at(name)), 0) << name;
    }
    EXPECT_EQ(got.gradients.size(), none.gradients.size());
    for (const auto &[name, values] : none.gradients)
      EXPECT_EQ(worstError(values, got.gradients[name]), 0) << name;
  }
}
} // namespace

TEST(Recompute, Gpt2TinyTrainsBitForBitUnderEveryPolicy) {
  Case setup("gpt2-tiny");
  setup.keepGradients = true;
  checkPolicies(setup);
}
TEST(Recompute, LlamaTinyTrainsBitForBitUnderEveryPolicy) {
  Case setup("llama-tiny");
  setup.keepGradients = true;
  checkPolicies(setup);
}
TEST(Recompute, MixtralTinyTrainsBitForBitUnderEveryPolicy) {
  Case setup("mixtral-tiny");
  setup.keepGradients = true;
  checkPolicies(setup);
}
// Dropout on (embd_pdrop, resid_pdrop 0.1): a recomputed dropout draws the
// forward's mask (same seed, same step counter), so the step is the same to
// the bit.
TEST(Recompute, Gpt2TinyWithDropoutTrainsBitForBitUnderEveryPolicy) {
  Case setup("gpt2-tiny-dropout");
  setup.keepGradients = true;
  checkPolicies(setup);
  // And the policies did recompute: dropout's state parameter (read in
  // every layer, in none) does not end the layers.
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, "gpt2-tiny-dropout",
                                            {2, 8, "f32", true});
  ASSERT_TRUE(module);
  TrainingOptions options;
  options.recompute = "full";
  ASSERT_TRUE(mlir::succeeded(buildTrainingPrograms(*module, options)));
  auto step = module->lookupSymbol<mlir::func::FuncOp>("step");
  ASSERT_TRUE(step);
  auto bytes =
      step->getAttrOfType<mlir::DenseI64ArrayAttr>(kActivationBytesAttr);
  ASSERT_TRUE(bytes);
  // Each layer keeps only its input [2, 8, 64] f32 under full.
  EXPECT_EQ(bytes.asArrayRef(), llvm::ArrayRef<int64_t>({4096, 4096}));
  // In a pipeline, a stage's backward recomputes its dropouts with the
  // micro-batch its own counter gives, the forward's.
  checkPolicies(Case("gpt2-tiny-dropout", "f32", "pp=2,microbatches=2"));
}
// Placed: tp's collectives stay (never recomputed) and its copy_to_group
// identities are recomputed; the batch splits over dp.
TEST(Recompute, Gpt2TinyOnDataAndTensorParallelRanks) {
  checkPolicies(Case("gpt2-tiny", "f32", "dp=2,tp=2"));
}
TEST(Recompute, LlamaTinyOnDataAndTensorParallelRanks) {
  checkPolicies(Case("llama-tiny", "f32", "dp=2,tp=2"));
}
TEST(Recompute, MixtralTinyOnDataAndTensorParallelRanks) {
  checkPolicies(Case("mixtral-tiny", "f32", "dp=2,tp=2"));
}
// Dropout under placement: each rank draws its own part of the mask (the
// counter covers the global element), and its recomputation draws it
// again; Llama's attention dropout too.
TEST(Recompute, DropoutOnDataAndTensorParallelRanks) {
  checkPolicies(Case("gpt2-tiny-dropout", "f32", "dp=2,tp=2"));
  Case llama("llama-tiny-dropout");
  llama.keepGradients = true;
  checkPolicies(llama);
  checkPolicies(Case("llama-tiny-dropout", "f32", "dp=2,tp=2"));
}
// Mixtral's attention dropout (attention_dropout 0.1) beside its experts:
// one rank (every gradient), tensor and data parallel ranks, and expert
// parallelism, whose exchanges stay while the attention's mask is drawn
// again.
TEST(Recompute, MixtralTinyWithDropoutTrainsBitForBitUnderEveryPolicy) {
  Case setup("mixtral-tiny-dropout");
  setup.keepGradients = true;
  checkPolicies(setup);
  checkPolicies(Case("mixtral-tiny-dropout", "f32", "dp=2,tp=2"));
  checkPolicies(Case("mixtral-tiny-dropout", "f32", "ep=2"));
}
// Every other placement: sequence parallelism's all-gathers and
// reduce-scatters stay; ZeRO-3 gathers again what a recomputation reads;
// pipeline stages run their recomputation in their backward; expert
// parallelism's exchanges and route stay; context parallelism's ring
// shifts stay, its block attentions are recomputed.
TEST(Recompute, LlamaTinyWithSequenceParallelismAndZero3) {
  checkPolicies(Case("llama-tiny", "f32", "tp=2,sp=on"));
  checkPolicies(Case("llama-tiny", "f32", "dp=2,zero=3"));
}
TEST(Recompute, LlamaTinyInAPipeline) {
  Case setup("llama-tiny", "f32", "pp=2,microbatches=2");
  checkPolicies(setup);
}
TEST(Recompute, MixtralTinyWithExpertParallelism) {
  Case setup("mixtral-tiny", "f32", "ep=2");
  checkPolicies(setup);
}
TEST(Recompute, LlamaTinyWithContextParallelism) {
  Case setup("llama-tiny", "f32", "cp=2");
  setup.seq = 16;
  checkPolicies(setup);
}

namespace {
/// The planned @step of GPT-2-tiny with `layers` layers (batch 4, sequence
/// 64) under `policy`: its arena bytes, and the choice it recorded.
struct Planned {
  int64_t arena = 0;
  std::string recompute;
  double flops = 0;                // What the recomputation adds.
  std::vector<int64_t> layerBytes; // What each layer keeps.
  std::vector<double> layerFlops;  // What each layer computes again.
};
/// `module` compiled with `policy`, its planned @step read.
Planned planModule(mlir::ModuleOp module, const std::string &policy) {
  TrainingOptions options;
  options.recompute = policy;
  EXPECT_TRUE(mlir::succeeded(buildTrainingPrograms(module, options)))
      << policy;
  auto step = module.lookupSymbol<mlir::func::FuncOp>("step");
  if (!step)
    return {};
  Planned planned;
  if (auto arena = step->getAttrOfType<mlir::IntegerAttr>("weft.arena_bytes"))
    planned.arena = arena.getInt();
  if (auto choice = step->getAttrOfType<mlir::StringAttr>(kRecomputeAttr))
    planned.recompute = choice.str();
  if (auto flops = step->getAttrOfType<mlir::FloatAttr>(kRecomputeFlopsAttr))
    planned.flops = flops.getValueAsDouble();
  if (auto bytes =
          step->getAttrOfType<mlir::DenseI64ArrayAttr>(kActivationBytesAttr))
    planned.layerBytes.assign(bytes.asArrayRef().begin(),
                              bytes.asArrayRef().end());
  if (auto flops = step->getAttrOfType<mlir::DenseF64ArrayAttr>(
          kRecomputeLayerFlopsAttr))
    planned.layerFlops.assign(flops.asArrayRef().begin(),
                              flops.asArrayRef().end());
  return planned;
}
Planned planStep(const std::string &policy, int64_t layers) {
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, "gpt2-tiny",
                                            {4, 64, "f32", true}, layers);
  if (!module)
    return {};
  return planModule(*module, policy);
}
int64_t stepArena(const std::string &policy, int64_t layers) {
  return planStep(policy, layers).arena;
}
} // namespace

// Over many layers (8 here; 3^8 choices are too many to plan) a budget
// between no recomputation's arena and full recomputation's is met by a
// greedy on a model of the arena (passes/recompute/Budget.h, tested on
// made-up models in budget_test.cpp): here, on a real model, the choice
// fits once planned, a mixed choice's layers keep and recompute what
// their policy does uniformly (the model's premise, as planned), and its
// FLOPs are within one layer's costliest option of the best choice the
// model admits, found by enumerating all 6561. One above no recomputation's
// arena needs none; one below full recomputation's is an error.
TEST(Recompute, AManyLayersBudgetIsWithinOneLayerOfTheModelsBest) {
  constexpr int64_t kLayers = 8;
  Planned uniform[3] = {planStep("none", kLayers),
                        planStep("selective", kLayers),
                        planStep("full", kLayers)};
  for (const Planned &p : uniform) {
    ASSERT_EQ(p.layerBytes.size(), size_t(kLayers)) << p.recompute;
    ASSERT_EQ(p.layerFlops.size(), size_t(kLayers)) << p.recompute;
  }
  int64_t none = uniform[0].arena, full = uniform[2].arena;
  ASSERT_GT(none, full);
  double gib = double(int64_t(1) << 30);
  double budget = (none + full) / 2 / gib;
  Planned chosen = planStep("budget=" + std::to_string(budget), kLayers);
  EXPECT_GT(chosen.arena, 0);
  EXPECT_LE(chosen.arena, budget * gib);
  llvm::Expected<RecomputeChoice> parsed = parseRecompute(chosen.recompute);
  ASSERT_TRUE(static_cast<bool>(parsed)) << chosen.recompute;
  ASSERT_EQ(parsed->layers.size(), size_t(kLayers)) << chosen.recompute;
  double modelled = 0;
  for (int64_t l = 0; l < kLayers; ++l) {
    ASSERT_GE(budgetOption(parsed->layers[l]), 0) << chosen.recompute;
    const Planned &u = uniform[budgetOption(parsed->layers[l])];
    modelled += u.layerFlops[l];
    EXPECT_EQ(chosen.layerBytes[l], u.layerBytes[l]) << "layer " << l;
  }
  EXPECT_NEAR(chosen.flops, modelled, 1e-9 * modelled);

  // The model (passes/recompute/Budget.h) from the uniform plannings, and
  // its best over every per-layer choice.
  BudgetModel model;
  model.noneArena = double(none);
  model.layers.resize(kLayers);
  double largestLayer = 0;
  for (int o = 0; o < kBudgetOptions; ++o) {
    double freed = 0;
    for (int64_t l = 0; l < kLayers; ++l) {
      model.layers[l].freed[o] =
          double(uniform[0].layerBytes[l] - uniform[o].layerBytes[l]);
      model.layers[l].flops[o] = uniform[o].layerFlops[l];
      freed += model.layers[l].freed[o];
      largestLayer = std::max(largestLayer, uniform[o].layerFlops[l]);
    }
    if (o > 0)
      model.workingSet[o] = std::max(0.0, uniform[o].arena - (none - freed));
  }
  auto modelsBest = [&](double budgetBytes) {
    return testutil::budgetModelsBest(model, budgetBytes);
  };
  double best = modelsBest(budget * gib);
  ASSERT_LT(best, std::numeric_limits<double>::infinity());
  EXPECT_LE(chosen.flops, best + largestLayer)
      << chosen.recompute << " against the model's best " << best;
  EXPECT_GT(chosen.flops, 0);

  // Between selective everywhere's arena and none's, the layers being
  // alike, the greedy recomputes selectively as many layers as the model
  // needs and no more: its best exactly (a greedy that took a layer fully
  // first would add a full layer's FLOPs).
  double between = (none + uniform[1].arena) / 2 / gib;
  Planned light = planStep("budget=" + std::to_string(between), kLayers);
  EXPECT_LE(light.arena, between * gib);
  EXPECT_NEAR(light.flops, modelsBest(between * gib), 1e-9 * light.flops)
      << light.recompute;
  EXPECT_GT(light.flops, 0);

  EXPECT_EQ(planStep("budget=" + std::to_string(2.0 * none / gib), 8).recompute,
            "none*8");
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, "gpt2-tiny",
                                            {4, 64, "f32", true}, 8);
  ASSERT_TRUE(module);
  TrainingOptions tight;
  tight.recompute = "budget=" + std::to_string(full / 2 / gib);
  std::string error;
  {
    testutil::DiagnosticCapture capture(*context, error);
    EXPECT_TRUE(mlir::failed(buildTrainingPrograms(*module, tight)));
  }
  EXPECT_NE(error.find("even recomputing every layer fully needs"),
            std::string::npos)
      << error;
}

// With few layers (3^L per-layer choices, at most 81) the budget is met
// exactly: the choice fits, and every choice that adds fewer FLOPs does
// not. Three layers (27 choices) at a budget half-way between no recomputation
// and full: a greedy over the layers in order would recompute the first
// ones; the exact choice need not. Full adds more FLOPs than selective, and
// none adds none.
TEST(Recompute, AFewLayersBudgetTakesTheFewestExtraFlopsThatFit) {
  constexpr int64_t kLayers = 3;
  int64_t none = stepArena("none", kLayers), full = stepArena("full", kLayers);
  ASSERT_GT(none, full);
  double gib = double(int64_t(1) << 30);
  double budget = (none + full) / 2 / gib;
  Planned chosen = planStep("budget=" + std::to_string(budget), kLayers);
  EXPECT_GT(chosen.arena, 0);
  EXPECT_LE(chosen.arena, budget * gib);
  EXPECT_GT(chosen.flops, 0);
  int checked = 0;
  for (int64_t i = 0; i < 27; ++i) {
    RecomputeChoice c;
    for (int64_t l = 0, rest = i; l < kLayers; ++l, rest /= 3)
      c.layers.push_back(rest % 3 == 0   ? RecomputePolicy::None
                         : rest % 3 == 1 ? RecomputePolicy::Selective
                                         : RecomputePolicy::Full);
    Planned other = planStep(c.str(), kLayers);
    if (other.flops < chosen.flops) {
      EXPECT_GT(other.arena, budget * gib)
          << c.str() << " adds fewer FLOPs than " << chosen.recompute
          << " and fits";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  Planned selective = planStep("selective", kLayers),
          fullPlan = planStep("full", kLayers);
  EXPECT_EQ(planStep("none", kLayers).flops, 0);
  EXPECT_GT(selective.flops, 0);
  EXPECT_GT(fullPlan.flops, selective.flops);
}

// A layer's candidates spell the policies: `full` is every one, `selective`
// every one but the GEMM and attention outputs, `none` none. Planned, each
// policy spelt per tensor gives the policy's arena, FLOPs and stored bytes,
// and named() gives it its name back. (A candidate the policy's rule
// treated apart, such as a GEMM output only a recomputed bias add reads,
// fails it.)
TEST(Recompute, PerTensorChoicesSpellThePolicies) {
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, "gpt2-tiny",
                                            {4, 64, "f32", true}, 2);
  ASSERT_TRUE(module);
  mlir::FailureOr<RecomputeCandidates> candidates =
      stepRecomputeCandidates(*module, TrainingOptions());
  ASSERT_TRUE(mlir::succeeded(candidates));
  ASSERT_EQ(candidates->layers, 2);
  ASSERT_TRUE(candidates->masksHold());
  // GPT-2's layer: ln_1; q, k and v (GEMM, bias, heads); attention's output
  // and log-sum-exp; the merged heads; c_proj (GEMM, bias); the residual;
  // ln_2; c_fc (GEMM, bias); GELU; the MLP's c_proj (GEMM, bias). The
  // layer's output is the next one's input, not a candidate.
  for (int64_t l = 0; l < 2; ++l) {
    ASSERT_EQ(candidates->heavy[l].size(), 22u);
    EXPECT_EQ(llvm::count(candidates->heavy[l], true), 8);
  }
  for (const char *policy :
       {"full,none", "selective,full", "none,selective", "selective*2"}) {
    SCOPED_TRACE(policy);
    RecomputeChoice tensors =
        candidates->asTensors(cantFail(parseRecompute(policy)));
    std::string spelled = tensors.str();
    EXPECT_NE(spelled.find("tensors:"), std::string::npos) << spelled;
    Planned want = planStep(policy, 2), have = planStep(spelled, 2);
    EXPECT_GT(want.arena, 0);
    EXPECT_EQ(have.arena, want.arena) << spelled;
    EXPECT_EQ(have.flops, want.flops) << spelled;
    EXPECT_EQ(have.layerBytes, want.layerBytes) << spelled;
    EXPECT_EQ(candidates->named(tensors).str(), policy);
  }
}

// With one rank and few layers the exact per-layer pick is then refined
// per tensor: one more of the tensors it recomputes is kept while the plan
// still fits and adds fewer FLOPs. Two layers at a budget half-way between
// no recomputation and full: the choice fits, adds fewer FLOPs than the
// best per-layer choice that fits (all 9 planned), and keeping any one
// more of the tensors it recomputes misses the budget or saves nothing.
TEST(Recompute, AFewLayersBudgetKeepsEveryTensorItCan) {
  constexpr int64_t kLayers = 2;
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, "gpt2-tiny",
                                            {4, 64, "f32", true}, kLayers);
  ASSERT_TRUE(module);
  mlir::FailureOr<RecomputeCandidates> candidates =
      stepRecomputeCandidates(*module, TrainingOptions());
  ASSERT_TRUE(mlir::succeeded(candidates));
  int64_t none = stepArena("none", kLayers), full = stepArena("full", kLayers);
  double gib = double(int64_t(1) << 30);
  double budget = (none + full) / 2 / gib;
  Planned chosen = planStep("budget=" + std::to_string(budget), kLayers);
  EXPECT_GT(chosen.arena, 0);
  EXPECT_LE(chosen.arena, budget * gib);
  EXPECT_NE(chosen.recompute.find("tensors:"), std::string::npos)
      << chosen.recompute;
  double perLayer = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < 9; ++i) {
    RecomputeChoice c;
    for (int64_t l = 0, rest = i; l < kLayers; ++l, rest /= 3)
      c.layers.push_back(budgetPolicy(static_cast<int>(rest % 3)));
    Planned other = planStep(c.str(), kLayers);
    if (other.arena <= budget * gib)
      perLayer = std::min(perLayer, other.flops);
  }
  EXPECT_LT(chosen.flops, perLayer) << chosen.recompute;
  RecomputeChoice at =
      candidates->asTensors(cantFail(parseRecompute(chosen.recompute)));
  int tried = 0;
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t i = 0; i < 64; ++i) {
      if (!(at.tensorsOf(l) >> i & 1))
        continue;
      RecomputeChoice more = at;
      more.tensors[l] &= ~(uint64_t(1) << i);
      Planned kept = planStep(candidates->named(more).str(), kLayers);
      EXPECT_TRUE(kept.arena > budget * gib || kept.flops >= chosen.flops)
          << "keeping layer " << l << "'s candidate " << i << " of "
          << chosen.recompute << " still fits and adds " << kept.flops
          << " FLOPs, not " << chosen.flops;
      ++tried;
    }
  EXPECT_GT(tried, 0);
}

namespace {
/// Two layers of norm, up projection, silu, down projection and residual
/// (test/passes/recompute/recompute.mlir's), then a head: a step with 8
/// recomputation candidates.
constexpr const char *kTwoLayerMlp = R"mlir(
func.func @forward(%x: tensor<512x32xf32> {weft.input = "x"},
                   %labels: tensor<512xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<32xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<32x128xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<128x32xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<512x32xf32>, tensor<32xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<512x32xf32>, tensor<32x128xf32>
  %a0 = weft.silu %h0 : tensor<512x128xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<512x128xf32>, tensor<128x32xf32>
  %r0 = weft.add %x, %d0 : tensor<512x32xf32>
  %n1w = weft.param "l1.norm" init(ones) {weft.layer = 1 : i64} : tensor<32xf32>
  %up1 = weft.param "l1.up" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<32x128xf32>
  %dn1 = weft.param "l1.down" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<128x32xf32>
  %n1 = weft.rms_norm %r0, %n1w {epsilon = 1.0e-05 : f64} : tensor<512x32xf32>, tensor<32xf32>
  %h1 = weft.matmul %n1, %up1 : tensor<512x32xf32>, tensor<32x128xf32>
  %a1 = weft.silu %h1 : tensor<512x128xf32>
  %d1 = weft.matmul %a1, %dn1 : tensor<512x128xf32>, tensor<128x32xf32>
  %r1 = weft.add %r0, %d1 : tensor<512x32xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<32x64xf32>
  %logits = weft.matmul %r1, %head : tensor<512x32xf32>, tensor<32x64xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<512x64xf32>, tensor<512xi32>
  return %loss : tensor<f32>
}
)mlir";

/// kTwoLayerMlp's planned step under `policy`.
Planned planMlp(const std::string &policy) {
  auto context = testutil::makeContext();
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(kTwoLayerMlp, context.get());
  EXPECT_TRUE(module);
  if (!module)
    return {};
  return planModule(*module, policy);
}
} // namespace

// With few candidates on one rank (at most 8: 256 choices) a budget is met
// exactly per tensor: every choice is planned, and the one that adds the
// fewest FLOPs and fits wins. On a two-layer MLP at budgets between no
// recomputation and full, the choice fits and no choice of all 256 adds
// fewer FLOPs and fits; at one of them the best per-layer choice adds
// more.
TEST(Recompute, FewCandidatesBudgetIsExactOverTensors) {
  auto context = testutil::makeContext();
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(kTwoLayerMlp, context.get());
  ASSERT_TRUE(module);
  mlir::FailureOr<RecomputeCandidates> candidates =
      stepRecomputeCandidates(*module, TrainingOptions());
  ASSERT_TRUE(mlir::succeeded(candidates));
  ASSERT_EQ(candidates->count(), 8);
  std::vector<Planned> every;
  for (uint64_t mask = 0; mask < 256; ++mask)
    every.push_back(
        planMlp(candidates->named(candidates->fromMask(mask)).str()));
  Planned none = planMlp("none"), full = planMlp("full");
  ASSERT_GT(none.arena, full.arena);
  EXPECT_EQ(every.front().arena, none.arena);
  EXPECT_EQ(every.back().arena, full.arena);
  double gib = double(int64_t(1) << 30);
  int beaten = 0;
  for (int step = 1; step < 4; ++step) {
    std::string spec = std::to_string(
        (none.arena + (full.arena - none.arena) * step / 4.0) / gib);
    double budget = std::stod(spec) * gib; // As the search reads it.
    SCOPED_TRACE("budget=" + spec);
    Planned chosen = planMlp("budget=" + spec);
    EXPECT_GT(chosen.arena, 0);
    EXPECT_LE(chosen.arena, budget);
    double best = std::numeric_limits<double>::infinity();
    for (const Planned &p : every)
      if (p.arena <= budget)
        best = std::min(best, p.flops);
    EXPECT_EQ(chosen.flops, best) << chosen.recompute;
    double perLayer = std::numeric_limits<double>::infinity();
    for (const char *policy :
         {"none,none", "none,selective", "none,full", "selective,none",
          "selective*2", "selective,full", "full,none", "full,selective",
          "full*2"}) {
      Planned p = planMlp(policy);
      if (p.arena <= budget)
        perLayer = std::min(perLayer, p.flops);
    }
    EXPECT_LE(chosen.flops, perLayer);
    beaten += chosen.flops < perLayer;
  }
  EXPECT_GT(beaten, 0);
}

namespace {
/// A pipelined step of `model` (`layers` layers, batch 8 x 32) on `plan`
/// under `policy`: each pipeline rank's activations as the report counts
/// them (its largest arena and the stash in flight), what each layer's
/// recomputation adds, and the choice the stages' backwards record.
struct PipelinePlanned {
  std::vector<int64_t> memory;
  std::vector<double> layerFlops;
  std::string recompute;
};
PipelinePlanned planPipeline(const std::string &model, int64_t layers,
                             const std::string &plan,
                             const std::string &policy) {
  PipelinePlanned planned;
  auto context = testutil::makeContext();
  auto module =
      testutil::buildExampleModel(*context, model, {8, 32, "f32"}, layers);
  if (!module)
    return planned;
  TrainingOptions options;
  options.plan = cantFail(parsePlan(plan));
  options.recompute = policy;
  EXPECT_TRUE(mlir::succeeded(buildTrainingPrograms(*module, options)))
      << policy;
  mlir::FailureOr<PlacementReport> report = estimatePlacement(*module);
  EXPECT_TRUE(mlir::succeeded(report) && report->pipeline) << policy;
  if (mlir::failed(report) || !report->pipeline)
    return planned;
  for (const RankEstimate &r : report->pipeline->stages)
    planned.memory.push_back(r.activationBytes);
  planned.recompute = report->recompute;
  for (auto f : module->getOps<mlir::func::FuncOp>())
    if (auto flops = f->getAttrOfType<mlir::DenseF64ArrayAttr>(
            kRecomputeLayerFlopsAttr)) {
      planned.layerFlops.assign(flops.asArrayRef().begin(),
                                flops.asArrayRef().end());
      break;
    }
  return planned;
}
} // namespace

namespace {
/// `model` with `layers` layers (0: its own) on `plan`, layer l on
/// pipeline rank `rankOf[l]` of two, at a budget between the two ranks'
/// peaks with every layer selective: against all 3^L per-layer choices,
/// each rank's pick fits it and every choice adding fewer FLOPs on that
/// rank's layers misses it there. Returns the pick.
std::string expectEachRanksFewestFlops(const std::string &model, int64_t layers,
                                       const std::string &plan,
                                       const std::vector<int64_t> &rankOf) {
  SCOPED_TRACE(model + " on " + plan);
  int64_t count = static_cast<int64_t>(rankOf.size()), choices = 1;
  for (int64_t l = 0; l < count; ++l)
    choices *= 3;
  auto choice = [&](int64_t i) {
    RecomputeChoice c;
    for (int64_t l = 0, rest = i; l < count; ++l, rest /= 3)
      c.layers.push_back(budgetPolicy(static_cast<int>(rest % 3)));
    return c;
  };
  std::vector<PipelinePlanned> all;
  for (int64_t i = 0; i < choices; ++i) {
    all.push_back(planPipeline(model, layers, plan, choice(i).str()));
    EXPECT_EQ(all.back().memory.size(), 2u) << choice(i).str();
    EXPECT_EQ(all.back().layerFlops.size(), size_t(count)) << choice(i).str();
    if (all.back().memory.size() != 2 ||
        all.back().layerFlops.size() != size_t(count))
      return "";
  }
  auto flopsOn = [&](const PipelinePlanned &p, int64_t r) {
    double f = 0;
    for (int64_t l = 0; l < count; ++l)
      if (rankOf[l] == r)
        f += p.layerFlops[l];
    return f;
  };
  // Every layer selective: choice (3^L - 1) / 2, each digit 1.
  const PipelinePlanned &selective = all[(choices - 1) / 2];
  int64_t more = selective.memory[0] > selective.memory[1] ? 0 : 1;
  double gib = double(int64_t(1) << 30);
  std::string spec =
      std::to_string((selective.memory[0] + selective.memory[1]) / 2.0 / gib);
  double budget = std::stod(spec) * gib; // As the search reads it.
  EXPECT_GT(selective.memory[more], budget);
  EXPECT_LE(selective.memory[1 - more], budget);
  PipelinePlanned chosen = planPipeline(model, layers, plan, "budget=" + spec);
  llvm::Expected<RecomputeChoice> parsed = parseRecompute(chosen.recompute);
  EXPECT_TRUE(static_cast<bool>(parsed)) << chosen.recompute;
  if (!parsed || parsed->layers.size() != size_t(count)) {
    ADD_FAILURE() << chosen.recompute;
    return "";
  }
  int64_t picked = 0;
  for (int64_t l = count - 1; l >= 0; --l) {
    // A pipeline's ranks are chosen per layer.
    if (budgetOption(parsed->layers[l]) < 0) {
      ADD_FAILURE() << chosen.recompute;
      return "";
    }
    picked = picked * 3 + budgetOption(parsed->layers[l]);
  }
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_LE(chosen.memory[r], budget) << "rank " << r;
    EXPECT_EQ(chosen.memory[r], all[picked].memory[r]) << "rank " << r;
    for (int64_t i = 0; i < choices; ++i)
      if (flopsOn(all[i], r) < flopsOn(all[picked], r))
        EXPECT_GT(all[i].memory[r], budget)
            << choice(i).str() << " adds fewer FLOPs on rank " << r << " than "
            << chosen.recompute << " and fits there";
  }
  return chosen.recompute;
}
} // namespace

// Under a pipeline each rank's activations (its arena and the stash of the
// micro-batches in flight on it) must fit, and depend on its own layers
// only, so each rank's are chosen on their own:
//  - Llama-tiny, 1F1B with 4 micro-batches: a search that met the budget
//    with one policy for the whole model (rank 0's full everywhere) fails
//    on rank 1, where selective fits;
//  - the same with ZeRO-3 over dp=2, where the stages read gathered copies
//    of the layers' parameters and a layer's rank comes from its own
//    parameters in @rank<r>.gather (reading only the stages' would put
//    every layer on rank 0, and rank 1's then take none);
//  - a 4-layer GPT-2-tiny interleaved over 2 virtual stages a rank (stage
//    s, layer s, on rank s mod 2: layers 0 and 2 on rank 0), against all
//    81 choices (a rank taken as stage / virtual stages fails it).
TEST(Recompute, APipelinedBudgetTakesEachRanksFewestExtraFlopsThatFit) {
  EXPECT_EQ(expectEachRanksFewestFlops("llama-tiny", 0, "pp=2,microbatches=4",
                                       {0, 1}),
            "full,selective");
  EXPECT_EQ(expectEachRanksFewestFlops(
                "llama-tiny", 0, "pp=2,dp=2,zero=3,microbatches=4", {0, 1}),
            "full,selective");
  expectEachRanksFewestFlops(
      "gpt2-tiny", 4, "pp=2,microbatches=4,schedule=interleaved,virtual=2",
      {0, 1, 0, 1});
}

// Five layers a rank (3^5 choices each) take the greedy per rank: GPT-2
// -tiny with 10 layers on pp=2, 2 micro-batches, at a budget half-way
// between no recomputation's and full recomputation's peak on the fuller
// rank. The pick fits every rank once planned and adds fewer FLOPs than
// full everywhere.
TEST(Recompute, APipelinedBudgetOverManyLayersFitsEveryRank) {
  const char *plan = "pp=2,microbatches=2";
  PipelinePlanned none = planPipeline("gpt2-tiny", 10, plan, "none"),
                  full = planPipeline("gpt2-tiny", 10, plan, "full");
  ASSERT_EQ(none.memory.size(), 2u);
  ASSERT_EQ(full.memory.size(), 2u);
  int64_t top = std::max(none.memory[0], none.memory[1]),
          bottom = std::max(full.memory[0], full.memory[1]);
  ASSERT_GT(top, bottom);
  double gib = double(int64_t(1) << 30);
  std::string spec = std::to_string((top + bottom) / 2.0 / gib);
  double budget = std::stod(spec) * gib;
  PipelinePlanned chosen =
      planPipeline("gpt2-tiny", 10, plan, "budget=" + spec);
  ASSERT_EQ(chosen.memory.size(), 2u);
  for (int64_t r = 0; r < 2; ++r)
    EXPECT_LE(chosen.memory[r], budget) << "rank " << r;
  double flops = 0, fullFlops = 0;
  for (double f : chosen.layerFlops)
    flops += f;
  for (double f : full.layerFlops)
    fullFlops += f;
  EXPECT_GT(flops, 0) << chosen.recompute;
  EXPECT_LT(flops, fullFlops) << chosen.recompute;
}

// With micro-batches the backward runs in @accumulate: it alone records
// what the recomputation keeps and adds (the step's mean of the
// accumulators runs none of it), and a budget is met over the largest
// program's arena, the one the runtime holds.
TEST(Recompute, MicroBatchesRecordTheMarksOnTheBackwardOnly) {
  auto build = [](const std::string &recompute) {
    auto context = testutil::makeContext();
    auto module = testutil::buildExampleModel(*context, "gpt2-tiny",
                                              {2, 64, "f32", true}, 4);
    TrainingOptions options;
    options.plan = cantFail(parsePlan("microbatches=2"));
    options.recompute = recompute;
    EXPECT_TRUE(mlir::succeeded(buildTrainingPrograms(*module, options)))
        << recompute;
    std::map<std::string, int64_t> arenas;
    std::set<std::string> marked;
    for (auto f : module->getOps<mlir::func::FuncOp>()) {
      if (auto a = f->getAttrOfType<mlir::IntegerAttr>("weft.arena_bytes"))
        arenas[f.getSymName().str()] = a.getInt();
      for (const char *mark : {kRecomputeAttr, kRecomputeFlopsAttr,
                               kRecomputeLayerFlopsAttr, kActivationBytesAttr})
        if (f->hasAttr(mark))
          marked.insert(f.getSymName().str() + ":" + mark);
    }
    return std::pair{arenas, marked};
  };
  auto [arenas, marked] = build("full");
  EXPECT_EQ(marked,
            (std::set<std::string>{"accumulate:weft.activation_bytes",
                                   "accumulate:weft.recompute",
                                   "accumulate:weft.recompute_flops",
                                   "accumulate:weft.recompute_layer_flops"}));
  ASSERT_TRUE(arenas.count("accumulate") && arenas.count("step"));
  int64_t none = 0, full = 0;
  for (auto [name, bytes] : build("none").first)
    none = std::max(none, bytes);
  for (auto [name, bytes] : arenas)
    full = std::max(full, bytes);
  ASSERT_LT(full, none);
  double half = (none + full) / 2.0;
  auto [fit, fitMarks] = build("budget=" + std::to_string(half / (1 << 30)));
  int64_t largest = 0;
  for (auto [name, bytes] : fit)
    largest = std::max(largest, bytes);
  EXPECT_LE(largest, half);
  EXPECT_GT(largest, full);
}

// The choice's text: one policy, runs per layer, a budget; what is not one
// of them says what is.
TEST(Recompute, ChoicesParseAndPrintBack) {
  for (const char *text : {"none", "full", "selective", "full*2,selective*6",
                           "full,none,selective", "budget=8",
                           "tensors:0+3+17,none", "tensors:63*2,full"}) {
    llvm::Expected<RecomputeChoice> c = parseRecompute(text);
    ASSERT_TRUE(static_cast<bool>(c)) << text;
    EXPECT_EQ(c->str(), text);
  }
  for (const char *text :
       {"most", "full*0", "full*x", "budget=0", "budget=-1", "budget=nan",
        "budget=", "budget=1e10", "full,,none", "tensors:", "tensors:64",
        "tensors:1+x", "tensors:-1", "tensors:1++2"}) {
    llvm::Expected<RecomputeChoice> c = parseRecompute(text);
    ASSERT_FALSE(static_cast<bool>(c)) << text;
    std::string message = llvm::toString(c.takeError());
    EXPECT_NE(message.find("expected none, full, selective"), std::string::npos)
        << message;
  }
  // A layer's candidates in any order, each once: the same choice.
  EXPECT_EQ(cantFail(parseRecompute("tensors:5+0+5,none")).str(),
            "tensors:0+5,none");
  // Recomputing no candidate is recomputing nothing.
  RecomputeChoice nothing = cantFail(parseRecompute("tensors:3,full"));
  nothing.tensors[0] = 0;
  EXPECT_EQ(nothing.str(), "none,full");
}

// What the rewrite is for: the memory plan's peak falls, most with full.
TEST(Recompute, FullAndSelectiveShrinkTheStepsArena) {
  int64_t none = stepArena("none", 8), selective = stepArena("selective", 8),
          full = stepArena("full", 8);
  EXPECT_GT(none, 0);
  EXPECT_LT(selective, none);
  EXPECT_LT(full, selective);
}

namespace {
/// The per-layer arrays `names` weft-recompute records on the step of a
/// GPT-2 (two layers) of sequence s, batch b, hidden h and a heads, f32,
/// by policy, placed by `plan`, with dropout 0.1 everywhere or none.
std::map<std::string, std::vector<int64_t>>
recordedArrays(int64_t s, int64_t b, int64_t h, int64_t a,
               const std::string &policy, const std::string &plan, bool dropout,
               const std::vector<const char *> &names) {
  std::map<std::string, std::vector<int64_t>> out;
  auto context = testutil::makeContext();
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/gpt2-tiny.json");
  EXPECT_TRUE(static_cast<bool>(config));
  if (!config)
    return out;
  config->hiddenSize = h;
  config->numHeads = a;
  config->intermediateSize = 4 * h;
  config->headDim = h / a;
  config->maxPositions = std::max<int64_t>(config->maxPositions, s);
  if (dropout)
    config->residDropout = config->embdDropout = config->attnDropout = 0.1;
  auto module = buildModel(*context, *config, {b, s, "f32", true});
  EXPECT_TRUE(static_cast<bool>(module));
  if (!module)
    return out;
  TrainingOptions options;
  options.recompute = policy;
  if (!plan.empty()) {
    auto parsed = parsePlan(plan);
    EXPECT_TRUE(static_cast<bool>(parsed)) << plan;
    if (!parsed)
      return out;
    options.plan = std::move(*parsed);
  }
  options.fuseAndPlan = false;
  EXPECT_TRUE(mlir::succeeded(buildTrainingPrograms(**module, options)));
  auto step = (*module)->lookupSymbol<mlir::func::FuncOp>("step");
  for (const char *name : names) {
    auto v =
        step ? step->getAttrOfType<mlir::DenseI64ArrayAttr>(name) : nullptr;
    EXPECT_TRUE(v) << "no " << name;
    if (v)
      out[name].assign(v.asArrayRef().begin(), v.asArrayRef().end());
  }
  return out;
}

/// The per-layer bytes weft-recompute records (f32, no dropout, one rank).
std::vector<int64_t> recordedBytes(int64_t s, int64_t b, int64_t h, int64_t a,
                                   const std::string &policy) {
  return recordedArrays(s, b, h, a, policy, "", false,
                        {kActivationBytesAttr})[kActivationBytesAttr];
}

/// The same under Korthikanti et al.'s accounting, with dropout, placed
/// by `plan`: per layer the stored values' bytes, and apart the attention
/// core's.
std::pair<std::vector<int64_t>, std::vector<int64_t>>
paperBytes(int64_t s, int64_t b, int64_t h, int64_t a,
           const std::string &policy, const std::string &plan) {
  auto arrays =
      recordedArrays(s, b, h, a, policy, plan, true,
                     {kKorthikantiBytesAttr, kKorthikantiCoreBytesAttr});
  return {arrays[kKorthikantiBytesAttr], arrays[kKorthikantiCoreBytesAttr]};
}
} // namespace

// Issue 18's memory estimator against Korthikanti et al. (2022), Table 2,
// with their accounting (fp16, 1-byte dropout masks, the attention core
// kept unless recomputed), per layer of a GPT with dropout: sbh(34 +
// 5as/h) without parallelism, sbh(10 + 24/t + 5as/(ht)) with tp=t,
// sbh(34 + 5as/h)/t with tp and sp, 34sbh/t with their selective
// recomputation (the core recomputed: what FlashAttention never stores),
// 2sbh with full recomputation. Weft's own stored values (policy none) give
// every term but the core; its full policy keeps the layer's input.
TEST(Recompute, KorthikantiAccountingMatchesTheirFormulasExactly) {
  struct Shape {
    int64_t s, b, h, a;
  };
  for (Shape x :
       {Shape{8, 2, 64, 4}, Shape{16, 1, 32, 4}, Shape{32, 3, 96, 8}}) {
    for (int64_t t : {1, 2, 4}) {
      for (bool sp : {false, true}) {
        if (sp && t == 1)
          continue;
        std::string plan =
            t == 1 ? "" : "tp=" + std::to_string(t) + (sp ? ",sp=on" : "");
        SCOPED_TRACE("s=" + std::to_string(x.s) + " b=" + std::to_string(x.b) +
                     " h=" + std::to_string(x.h) + " a=" + std::to_string(x.a) +
                     " plan=" + plan);
        int64_t sbh = x.s * x.b * x.h, core = 5 * x.a * x.s * x.s * x.b;
        // Everything but the core: 10 replicated sbh (norm inputs and
        // outputs, two masks) and 24 split, or all 34 split under sp.
        int64_t rest = sp ? 34 * sbh / t : 10 * sbh + 24 * sbh / t;
        auto [bytes, cores] = paperBytes(x.s, x.b, x.h, x.a, "none", plan);
        ASSERT_EQ(bytes.size(), 2u);
        ASSERT_EQ(cores.size(), 2u);
        for (int l = 0; l < 2; ++l) {
          EXPECT_EQ(bytes[l] + cores[l], rest + core / t) << "layer " << l;
          EXPECT_EQ(bytes[l], rest) << "layer " << l << " (their selective)";
        }
      }
    }
    int64_t sbh = x.s * x.b * x.h;
    auto [full, cores] = paperBytes(x.s, x.b, x.h, x.a, "full", "");
    ASSERT_EQ(full.size(), 2u);
    for (int l = 0; l < 2; ++l) {
      EXPECT_EQ(full[l], 2 * sbh) << "full, layer " << l;
      EXPECT_EQ(cores[l], 0) << "full, layer " << l;
    }
  }
}

// Korthikanti et al. count sbh(34 + 5as/h) bytes per layer in fp16 with
// dropout. Weft stores f32 (4 bytes), has no dropout masks (-3sbh of their
// 34), and its attention keeps the output and the log-sum-exp (b s a
// values) instead of the s x s probabilities: 16 sbh values + bsa without
// recomputation; full keeps the layer's input (sbh, their 2sbh in fp16);
// selective keeps the GEMMs' and attention's outputs and the input (q, k,
// v, the output, its projection, the MLP's 4h and the input: 10 sbh) and
// the log-sum-exp.
TEST(Recompute, RecordedBytesPerLayerFollowKorthikanti) {
  struct Shape {
    int64_t s, b, h, a;
  };
  for (Shape x :
       {Shape{8, 2, 64, 4}, Shape{16, 1, 32, 2}, Shape{32, 3, 48, 6}}) {
    SCOPED_TRACE("s=" + std::to_string(x.s) + " b=" + std::to_string(x.b) +
                 " h=" + std::to_string(x.h) + " a=" + std::to_string(x.a));
    int64_t sbh = x.s * x.b * x.h, bsa = x.b * x.s * x.a;
    std::map<std::string, int64_t> want = {{"none", 4 * (16 * sbh + bsa)},
                                           {"selective", 4 * (10 * sbh + bsa)},
                                           {"full", 4 * sbh}};
    for (const auto &[policy, bytes] : want) {
      std::vector<int64_t> got = recordedBytes(x.s, x.b, x.h, x.a, policy);
      ASSERT_EQ(got.size(), 2u) << policy; // gpt2-tiny's two layers.
      for (int64_t layer : got)
        EXPECT_EQ(layer, bytes) << policy;
    }
  }
}

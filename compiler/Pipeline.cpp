//===- Pipeline.cpp - named compiler pipelines ----------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/Passes.h"

#include "codegen/KernelSource.h"
#include "codegen/Passes.h"
#include "passes/autodiff/Passes.h"
#include "passes/costmodel/CostModel.h"
#include "passes/costmodel/Report.h"
#include "passes/fusion/Passes.h"
#include "passes/health/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/optimizer/Passes.h"
#include "passes/pipeline/Names.h"
#include "passes/pipeline/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/recompute/Budget.h"
#include "passes/recompute/Passes.h"
#include "passes/sharding/Passes.h"

#include "codegen/SchedBundle.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

using namespace mlir;

namespace weft {

llvm::Error checkTrainingSettings(const AdamWConfig &adamw, double bucketMb,
                                  int64_t attentionScratchMb,
                                  llvm::StringRef prefix) {
  constexpr const char *kUnit = "it must be in [0, 1)",
                       *kPositive = "it must be a positive number",
                       *kNonNegative = "it must be 0 or more";
  struct Setting {
    const char *name;
    double value;
    bool ok;
    const char *rule;
  };
  const Setting settings[] = {
      {"beta1", adamw.beta1, adamw.beta1 >= 0 && adamw.beta1 < 1, kUnit},
      {"beta2", adamw.beta2, adamw.beta2 >= 0 && adamw.beta2 < 1, kUnit},
      {"adam-eps", adamw.eps, std::isfinite(adamw.eps) && adamw.eps > 0,
       kPositive},
      {"weight-decay", adamw.weightDecay,
       std::isfinite(adamw.weightDecay) && adamw.weightDecay >= 0,
       kNonNegative},
      {"max-grad-norm", adamw.maxGradNorm,
       std::isfinite(adamw.maxGradNorm) && adamw.maxGradNorm >= 0,
       kNonNegative},
      {"bucket-mb", bucketMb, std::isfinite(bucketMb) && bucketMb > 0,
       kPositive}};
  for (const Setting &s : settings)
    if (!s.ok)
      return llvm::createStringError(
          llvm::formatv("{0}{1} is out of range: {2} ({3})", prefix, s.name,
                        s.value, s.rule));
  if (attentionScratchMb < 0)
    return llvm::createStringError(
        llvm::formatv("{0}attention-scratch-mb must be at least 0, not {1}",
                      prefix, attentionScratchMb));
  return llvm::Error::success();
}

/// How the pipeline's programs lower to sched: its target and the
/// lowering's settings.
static SchedArenasOptions
schedLoweringOf(const TrainingPipelineOptions &options) {
  SchedArenasOptions lowering;
  lowering.target = options.target;
  lowering.attentionScratchMb = options.attentionScratchMb;
  lowering.fp8Storage = options.fp8Storage;
  lowering.overlapCollectives = options.overlapCollectives;
  return lowering;
}

/// The passes of `weft-train`; with `untilRecompute`, only those before
/// weft-recompute (the step the budget search reads its per-tensor
/// candidates from).
static llvm::Error addTrainingPasses(OpPassManager &pm,
                                     const TrainingPipelineOptions &options,
                                     bool untilRecompute) {
  if (llvm::Error e = checkTrainingSettings(
          {options.beta1, options.beta2, options.eps, options.weightDecay,
           options.maxGradNorm},
          options.bucketMb, options.attentionScratchMb, "weft-train: "))
    return e;
  Plan plan;
  if (!options.plan.empty()) {
    llvm::Expected<Plan> parsed = parsePlan(options.plan);
    if (!parsed)
      return parsed.takeError();
    plan = std::move(*parsed);
  }
  if (options.target != "cpu" && options.target != "cuda")
    return llvm::createStringError("weft-train: unknown target '" +
                                   options.target + "' (supported: cpu, cuda)");
  llvm::Expected<RecomputeChoice> recompute = parseRecompute(options.recompute);
  if (!recompute)
    return llvm::createStringError("weft-train: " +
                                   llvm::toString(recompute.takeError()));
  if (recompute->budgetGiB)
    return llvm::createStringError(
        "weft-train: recompute=" + options.recompute +
        " is resolved by weftc compile (buildTrainingPrograms), which "
        "compiles candidates to find it; pass the per-layer choice it made "
        "(the report's recompute=...)");
  // On the whole forward, before partitioning places the quantizations.
  Fp8Options fp8{options.fp8,        options.fp8Keep,   options.fp8MinDim,
                 options.fp8History, options.fp8Margin, options.fp8Device,
                 options.plan};
  if (llvm::Error e = checkFp8Options(fp8, "fp8"))
    return llvm::createStringError("weft-train: " +
                                   llvm::toString(std::move(e)));
  Fp8Choice fp8Choice = cantFail(parseFp8(options.fp8));
  bool delayedFp8 = fp8Choice.anyDelayed();
  if (fp8Choice.any()) {
    pm.addPass(createFp8(fp8));
  }
  bool pipelined = plan.size("pp") > 1;
  llvm::Expected<ProbeChoice> probes = parseProbes(options.probes);
  if (!probes)
    return llvm::createStringError("weft-train: probes: " +
                                   llvm::toString(probes.takeError()));
  // On the whole forward, before partitioning, which then combines each
  // rank's part of a probe as it does the loss's.
  if (probes->activations || probes->attention || probes->router) {
    ProbesOptions probeOptions;
    probeOptions.probes = options.probes;
    pm.addPass(createProbes(probeOptions));
  }
  // A pipeline runs micro-batches even when there is one.
  bool accumulates = plan.microbatches > 1 || pipelined;
  // ZeRO-3 gathers each parameter once per step for all its micro-batches
  // unless the plan says gather=microbatch; with that, or without
  // micro-batches, the backward gathers again (FSDP's reshard after
  // forward) unless the plan says gather=step.
  bool gatherPerStep =
      plan.zero == 3 && accumulates && plan.gather != "microbatch";
  if (plan.worldSize() > 1) {
    ApplyPlanOptions apply;
    apply.plan = options.plan;
    pm.addPass(createApplyPlan(apply));
    OpPassManager &forward = pm.nest<func::FuncOp>();
    forward.addPass(createShardingPropagate());
    forward.addPass(createPartition());
    // FP8 tensors gathered for their quantization move quantized; not
    // parameters ZeRO-3 gathers once a step for its micro-batches
    // (weft-gather-per-step, below, quantizes those in its @gather).
    if (fp8Choice.any()) {
      Fp8GatherOptions gather;
      gather.params = !gatherPerStep;
      forward.addPass(createFp8Gather(gather));
    }
  }
  if (pipelined) {
    if (options.keepGradients)
      return llvm::createStringError(
          "weft-train: keep-gradients needs a plan without pp");
    AssignStagesOptions stages;
    stages.stages = plan.size("pp") * plan.chunks;
    stages.boundaries = plan.stages;
    pm.addPass(createAssignStages(stages));
  }
  // weft-autodiff checks the loss scale's range. Under pp the scale is a
  // parameter of no stage: the last stage's backward seeds its gradient
  // with it, and every rank's step keeps its own copy, which moves alike
  // on every rank (the norm that decides it is summed over pp).
  AutodiffOptions autodiff;
  autodiff.lossScale = options.lossScale;
  autodiff.lossScaleWindow = options.lossScaleWindow;
  pm.addPass(createAutodiff(autodiff));
  // @forward is now the evaluation program: no dropout.
  pm.addPass(createEvalForward());
  if (untilRecompute)
    return llvm::Error::success();
  // Before ZeRO-3's re-gathers, so a recomputation's parameter reads are
  // backward reads that gather again.
  RecomputeOptions recomputeOptions;
  recomputeOptions.policy = options.recompute;
  recomputeOptions.regather = plan.sequenceParallel;
  pm.addNestedPass<func::FuncOp>(createRecompute(recomputeOptions));
  if (plan.zero == 3 && !gatherPerStep && plan.gather != "step")
    pm.addNestedPass<func::FuncOp>(createReshardAfterForward());
  if (accumulates) {
    // The kept @train_step would be the accumulators' mean, not one
    // micro-batch's gradients: nothing a test could compare.
    if (options.keepGradients)
      return llvm::createStringError(
          "weft-train: keep-gradients needs microbatches=1");
    AccumulateGradientsOptions accumulate;
    accumulate.microbatches = plan.microbatches;
    pm.addPass(createAccumulateGradients(accumulate));
  }
  if (gatherPerStep) {
    // FP8 storage holds the quantized states as codes.
    GatherPerStepOptions perStep;
    perStep.fp8Codes =
        fp8Choice.any() &&
        codegen::fp8StorageOn(options.fp8Storage, options.target == "cuda");
    pm.addPass(createGatherPerStep(perStep));
    // The quantizations it moved into @gather: their gathers then move
    // FP8 values.
    if (fp8Choice.any()) {
      Fp8GatherOptions gather;
      gather.func = kGatherFunc;
      pm.addNestedPass<func::FuncOp>(createFp8Gather(gather));
    }
  }
  AdamWOptions adamw;
  adamw.beta1 = options.beta1;
  adamw.beta2 = options.beta2;
  adamw.eps = options.eps;
  adamw.weightDecay = options.weightDecay;
  adamw.maxGradNorm = options.maxGradNorm;
  adamw.keepFunc = options.keepGradients;
  adamw.layerGradNorms = probes->gradients;
  pm.addPass(createAdamW(adamw));
  if (delayedFp8)
    pm.addPass(createFp8RecordAmax());
  // ZeRO-1/2 (optimizer splits from the plan); otherwise it only records
  // each parameter's gradient size.
  pm.addPass(createPartitionOptimizer());
  if (pipelined) {
    SplitStagesOptions split;
    split.schedule = plan.schedule;
    split.chunks = plan.chunks;
    pm.addPass(createSplitStages(split));
  }
  // Every function left is a program: @step, @forward, @accumulate with
  // micro-batches (and @train_step); with pp, each stage's forward and
  // backward and each rank's step.
  OpPassManager &programs = pm.nest<func::FuncOp>();
  bool gpu = options.target == "cuda";
  // On one CPU stream a ring shift overlaps the block attention as a send
  // posted early and a receive late; a GPU exchanges on the comm stream
  // beside compute, as one grouped send and receive.
  if (!gpu)
    programs.addPass(createSplitRingShifts());
  BucketAllReduceOptions bucket;
  bucket.bucketMb = options.bucketMb;
  programs.addPass(createBucketAllReduce(bucket));
  if (!options.fuseAndPlan)
    return llvm::Error::success();
  if (gpu && options.gemmEpilogues)
    programs.addPass(createGemmEpilogue());
  // The sched lowering runs every elementwise op as a generated kernel:
  // the weft programs are fused as a bundle's are, so weft-sched-arenas
  // plans what the bundle holds.
  FuseElementwiseOptions fuse;
  fuse.singleOps = true;
  programs.addPass(createFuseElementwise(fuse));
  SchedArenasOptions lowering = schedLoweringOf(options);
  // The weft programs, planned: each gets the arena its sched program
  // plans to (the one memory plan; what the runtimes allocate).
  if (!options.sched)
    pm.addPass(createSchedArenas(lowering));
  else
    addSchedPasses(pm, lowering);
  return llvm::Error::success();
}

llvm::Error buildTrainingPipeline(OpPassManager &pm,
                                  const TrainingPipelineOptions &options) {
  return addTrainingPasses(pm, options, /*untilRecompute=*/false);
}

/// `weft-train`'s options for what buildTrainingPrograms is given.
static void setPipelineOptions(TrainingPipelineOptions &pipeline,
                               const TrainingOptions &options) {
  pipeline.plan = options.plan.str();
  pipeline.target = options.cudaArchs.empty() ? "cpu" : "cuda";
  pipeline.bucketMb = options.bucketMb;
  pipeline.gemmEpilogues = options.gemmEpilogues;
  pipeline.overlapCollectives = options.overlapCollectives;
  pipeline.beta1 = options.adamw.beta1;
  pipeline.beta2 = options.adamw.beta2;
  pipeline.eps = options.adamw.eps;
  pipeline.weightDecay = options.adamw.weightDecay;
  pipeline.maxGradNorm = options.adamw.maxGradNorm;
  pipeline.keepGradients = options.keepGradients;
  pipeline.fuseAndPlan = options.fuseAndPlan;
  pipeline.sched = options.sched;
  pipeline.attentionScratchMb = options.attentionScratchMb;
  pipeline.recompute = options.recompute;
  pipeline.lossScale = options.lossScale;
  pipeline.lossScaleWindow = options.lossScaleWindow;
  pipeline.fp8 = options.fp8.recipe;
  pipeline.fp8Keep = options.fp8.keep;
  pipeline.fp8MinDim = options.fp8.minDim;
  pipeline.fp8Device = options.fp8.device;
  pipeline.fp8History = options.fp8.history;
  pipeline.fp8Margin = options.fp8.margin;
  pipeline.fp8Storage = options.fp8Storage;
  pipeline.probes = options.probes;
}

void registerTrainingPipeline() {
  registerPassPipeline(
      "weft-train",
      "The training pipeline weftc compile runs: placement, autodiff, AdamW, "
      "bucketing, fusion and memory planning",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainingPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (llvm::Error e = buildTrainingPipeline(pm, options))
          return errorHandler(llvm::toString(std::move(e)));
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> print) {
        print(TrainingPipelineOptions());
      });
}

namespace {
/// What a candidate recomputation costs once planned. The activation bytes
/// each rank that holds layers peaks at: without pp one, the largest arena
/// among `module`'s programs (the one the runtime holds); under pp each
/// pipeline rank's, as the report counts them (its largest arena and the
/// stash of the micro-batches in flight on it), with how many
/// micro-batches' stashes a byte a layer keeps counts for there. Then,
/// from the backward weft-recompute marked (the step, @accumulate with
/// micro-batches, or under pp each stage's backward), per layer what it
/// keeps for the backward (bytes) and computes again (FLOPs), and which of
/// those ranks holds it.
struct RecomputeCost {
  std::vector<int64_t> memory;
  std::vector<double> inFlight;
  std::vector<int64_t> layerBytes;
  std::vector<double> layerFlops;
  std::vector<int64_t> rankOf;

  /// What every layer adds.
  double totalFlops() const {
    double total = 0;
    for (double f : layerFlops)
      total += f;
    return total;
  }
  /// What `layers` add (their FLOPs).
  double flops(llvm::ArrayRef<int64_t> layers) const {
    double total = 0;
    for (int64_t l : layers)
      total += layerFlops[l];
    return total;
  }
};

FailureOr<RecomputeCost> recomputeCost(ModuleOp module, int64_t layers) {
  RecomputeCost cost;
  func::FuncOp backward;
  int64_t arena = 0;
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    if (auto a = f->getAttrOfType<IntegerAttr>("weft.arena_bytes"))
      arena = std::max(arena, a.getInt());
    if (!backward && f->hasAttr(kRecomputeAttr))
      backward = f;
  }
  if (backward) {
    if (auto bytes =
            backward->getAttrOfType<DenseI64ArrayAttr>(kActivationBytesAttr))
      cost.layerBytes.assign(bytes.asArrayRef().begin(),
                             bytes.asArrayRef().end());
    if (auto flops = backward->getAttrOfType<DenseF64ArrayAttr>(
            kRecomputeLayerFlopsAttr))
      cost.layerFlops.assign(flops.asArrayRef().begin(),
                             flops.asArrayRef().end());
  }
  cost.rankOf.assign(layers, 0);
  if (!module->hasAttr(kPipelineScheduleAttr)) {
    cost.memory = {arena};
    cost.inFlight = {1.0};
    return cost;
  }
  FailureOr<PlacementReport> report = estimatePlacement(module);
  if (failed(report) || !report->pipeline)
    return failure();
  const PipelineEstimate &pipe = *report->pipeline;
  for (const RankEstimate &r : pipe.stages) {
    cost.memory.push_back(r.activationBytes);
    cost.inFlight.push_back(double(r.inFlight) / double(pipe.chunks));
  }
  // A layer's parameters carry its stage s (weft-pipeline-assign-stages),
  // virtual stage s / ranks of rank s % ranks, wherever they are read: a
  // stage's programs, or under ZeRO-3 its rank's @rank<r>.gather (the
  // stage then reads the gathered copy, which has no layer).
  module.walk([&](ParamOp p) {
    auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr);
    auto s = p->getAttrOfType<IntegerAttr>(kStageAttr);
    if (l && s && l.getInt() < layers)
      cost.rankOf[l.getInt()] = s.getInt() % pipe.ranks;
  });
  return cost;
}

/// Up to this many per-layer choices (3^L: none, selective or full per
/// layer) of one rank's layers a budget is met exactly, by planning every
/// one.
constexpr int64_t kExactCandidates = 81;

/// The most plannings the per-tensor descent after an exact per-layer pick
/// makes.
constexpr int64_t kDescentPlannings = 128;
/// Up to this many candidates on one rank (2^8 = 256 choices), a budget is
/// met exactly per tensor, by planning every choice.
constexpr int64_t kExactTensorCandidates = 8;

/// The per-tensor choice that adds the fewest FLOPs (the smaller arena on
/// a tie) of those that fit `budget` once planned, trying every one:
/// exact, where few candidates make that affordable.
FailureOr<std::string> everyTensorChoice(
    const RecomputeCandidates &candidates, int64_t budget,
    function_ref<FailureOr<RecomputeCost>(const RecomputeChoice &)> costOf) {
  std::optional<std::tuple<double, int64_t, std::string>> best;
  for (uint64_t mask = 0; mask < (uint64_t(1) << candidates.count()); ++mask) {
    RecomputeChoice choice = candidates.named(candidates.fromMask(mask));
    FailureOr<RecomputeCost> cost = costOf(choice);
    if (failed(cost))
      return failure();
    int64_t memory = cost->memory.front();
    if (memory > budget)
      continue;
    std::tuple<double, int64_t, std::string> mine{cost->totalFlops(), memory,
                                                  choice.str()};
    if (!best || std::tie(std::get<0>(mine), std::get<1>(mine)) <
                     std::tie(std::get<0>(*best), std::get<1>(*best)))
      best = std::move(mine);
  }
  // Every layer full was checked to fit.
  return best ? std::get<2>(*best)
              : candidates.named(candidates.fromMask(~uint64_t(0))).str();
}

/// Per tensor, recomputes less than `picked`, a choice that fits `budget`
/// once planned and adds `flops`: in sweeps over the tensors it recomputes,
/// the costliest first, keeps each one whose keeping still fits once
/// planned and adds fewer FLOPs, until a sweep keeps none (keeping any one
/// more then misses or saves nothing) or kDescentPlannings plannings are
/// made. Returns the choice, each layer named by its policy where it has
/// one.
FailureOr<std::string> keepWhileItFits(
    const RecomputeCandidates &candidates, const RecomputeChoice &picked,
    double flops, int64_t budget,
    function_ref<FailureOr<RecomputeCost>(const RecomputeChoice &)> costOf) {
  RecomputeChoice at = candidates.asTensors(picked);
  int64_t plannings = 0;
  for (bool kept = true; kept;) {
    kept = false;
    // What `at` recomputes, the costliest first.
    std::vector<std::tuple<double, int64_t, int64_t>> order;
    for (int64_t l = 0; l < candidates.layers; ++l)
      for (auto [i, f] : llvm::enumerate(candidates.flops[l]))
        if ((at.tensorsOf(l) >> i) & 1)
          order.push_back({-f, l, static_cast<int64_t>(i)});
    llvm::sort(order);
    for (auto [negated, l, i] : order) {
      if (plannings++ == kDescentPlannings)
        return candidates.named(at).str();
      RecomputeChoice next = at;
      next.tensors[l] &= ~(uint64_t(1) << i);
      FailureOr<RecomputeCost> cost = costOf(candidates.named(next));
      if (failed(cost))
        return failure();
      if (cost->memory.front() <= budget && cost->totalFlops() < flops) {
        at = next;
        flops = cost->totalFlops();
        kept = true;
      }
    }
  }
  return candidates.named(at).str();
}

/// How many layers (`weft.layer` of parameters) `module` has.
int64_t layersOf(ModuleOp module) {
  int64_t layers = 0;
  module.walk([&](ParamOp p) {
    if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr))
      layers = std::max(layers, l.getInt() + 1);
  });
  return layers;
}

/// Resolves `--recompute budget=G`: a choice (per layer, or per tensor on
/// one rank with few layers) under which every
/// rank's activations (the memory plan's peak, planned as the report plans
/// it; under pp each pipeline rank's, stash in flight included) fit G GiB,
/// adding as few FLOPs as the method can tell (docs/recompute.md). A
/// rank's activations depend on its own layers' choices only (without pp
/// one rank holds them all), so each rank's layers are chosen on their
/// own, all ranks in each planning:
///  - With at most 81 choices (3^L, L layers on each rank) every one is
///    planned and, per rank, the one adding the fewest FLOPs that fits wins
///    (the smaller peak on a tie): exact over per-layer policies. On one
///    rank, every per-tensor choice (`tensors:`) is planned instead when
///    the step has at most 8 candidates (everyTensorChoice: exact over
///    tensors), else keepWhileItFits keeps what it can of the pick's
///    recomputed tensors (a descent, not Checkmate's per-tensor optimum).
///  - With more, three uniform plannings (every layer none, selective,
///    full) give each rank the model of passes/recompute/Budget.h: what
///    each layer's policy frees (weft.activation_bytes, times the
///    micro-batches in flight under pp) and costs
///    (weft.recompute_layer_flops), and each policy's working set.
///    orderBudgetSteps orders per-layer steps and picks the first the model
///    says fits, within one layer's costliest option of the model's best.
///    That candidate is planned; a rank it misses is bisected over its
///    later candidates for the first that fits (every layer full, which
///    fits, if none does), all ranks in the same plannings: at most
///    2 + log2(2L) plannings beyond the uniform ones and the pick.
///  Under pp the ranks' picks, joined, are planned once more to check
///  that they fit together.
FailureOr<std::string> chooseRecomputation(ModuleOp module,
                                           const TrainingOptions &options,
                                           double gib) {
  int64_t layers = layersOf(module);
  if (layers == 0)
    return module.emitError("--recompute ")
               << options.recompute
               << ": the model has no layers (weft.layer) to recompute",
           failure();
  auto uniform = [&](RecomputePolicy p) {
    RecomputeChoice c;
    c.layers.assign(layers, p);
    return c;
  };
  auto costOf = [&](const RecomputeChoice &choice) -> FailureOr<RecomputeCost> {
    OwningOpRef<ModuleOp> trial = module.clone();
    TrainingOptions t = options;
    t.recompute = choice.str();
    t.sched = false;
    t.fuseAndPlan = true;
    if (failed(buildTrainingPrograms(*trial, t)))
      return failure();
    FailureOr<RecomputeCost> cost = recomputeCost(*trial, layers);
    if (failed(cost))
      return module.emitError("--recompute ")
                 << options.recompute << ": cannot estimate the pipeline's "
                 << "ranks under " << choice.str(),
             failure();
    if (static_cast<int64_t>(cost->layerBytes.size()) != layers ||
        static_cast<int64_t>(cost->layerFlops.size()) != layers)
      return module.emitError("--recompute ")
                 << options.recompute << ": under " << choice.str()
                 << " the backward records "
                 << static_cast<int64_t>(cost->layerBytes.size())
                 << " layers' activations and "
                 << static_cast<int64_t>(cost->layerFlops.size())
                 << " layers' FLOPs, but the model has " << layers
                 << " layers; give a policy per layer",
             failure();
    return cost;
  };
  auto budget = static_cast<int64_t>(gib * double(int64_t(1) << 30));
  auto fitsAll = [&](const RecomputeCost &c) {
    return llvm::all_of(c.memory, [&](int64_t m) { return m <= budget; });
  };
  FailureOr<RecomputeCost> full = costOf(uniform(RecomputePolicy::Full));
  if (failed(full))
    return failure();
  int64_t ranks = static_cast<int64_t>(full->memory.size());
  for (int64_t r = 0; r < ranks; ++r)
    if (full->memory[r] > budget)
      return module.emitError("--recompute ")
                 << options.recompute << ": even recomputing every layer "
                 << "fully needs "
                 << (full->memory[r] >= (int64_t(1) << 30) / 10
                         ? llvm::formatv("{0:F2} GiB",
                                         full->memory[r] / double(1 << 30))
                               .str()
                         : llvm::formatv("{0:F2} MiB",
                                         full->memory[r] / double(1 << 20))
                               .str())
                 << " of activations"
                 << (ranks > 1 ? " on pipeline rank " + std::to_string(r)
                               : std::string())
                 << " (the memory plan's largest arena"
                 << (ranks > 1 ? " and the stash in flight" : "")
                 << "); raise the budget or split the model over more ranks",
             failure();
  FailureOr<RecomputeCost> none = costOf(uniform(RecomputePolicy::None));
  if (failed(none))
    return failure();
  if (fitsAll(*none))
    return uniform(RecomputePolicy::None).str();
  std::vector<std::vector<int64_t>> layersOn(ranks);
  for (int64_t l = 0; l < layers; ++l)
    layersOn[full->rankOf[l]].push_back(l);
  // The answer, an option per layer (0 none, 1 selective, 2 full), set
  // rank by rank.
  std::vector<int> chosen(layers, 0);
  auto choiceOf = [&](llvm::ArrayRef<int> option) {
    RecomputeChoice c;
    for (int o : option)
      c.layers.push_back(budgetPolicy(o));
    return c;
  };
  // Sets rank r's layers to their options in `option` (indexed like its
  // layers).
  auto assign = [&](std::vector<int> &to, int64_t r,
                    llvm::ArrayRef<int> option) {
    for (auto [i, l] : llvm::enumerate(layersOn[r]))
      to[l] = option[i];
  };

  // Under pp the answer joins each rank's pick from different plannings,
  // which holds while a rank's activations follow its own layers only:
  // planned once more, a rank it misses takes full on its layers (which
  // fit, as checked), and a miss then is an error, not a silent overrun.
  // The first rank `option` misses once planned (-1: none), each rank
  // that misses set to full.
  auto fullWhereMissed = [&](std::vector<int> &option) -> FailureOr<int64_t> {
    FailureOr<RecomputeCost> cost = costOf(choiceOf(option));
    if (failed(cost))
      return failure();
    int64_t missed = -1;
    for (int64_t r = ranks - 1; r >= 0; --r)
      if (cost->memory[r] > budget) {
        missed = r;
        assign(option, r, std::vector<int>(layersOn[r].size(), 2));
      }
    return missed;
  };
  auto verified = [&](std::vector<int> option) -> FailureOr<std::string> {
    if (ranks == 1)
      return choiceOf(option).str(); // Planned as the answer already.
    FailureOr<int64_t> missed = fullWhereMissed(option);
    if (succeeded(missed) && *missed >= 0)
      missed = fullWhereMissed(option);
    if (failed(missed))
      return failure();
    if (*missed >= 0)
      return module.emitError("--recompute ")
                 << options.recompute << ": pipeline rank " << *missed
                 << " misses the budget under " << choiceOf(option).str()
                 << ", which full recomputation of its layers alone met",
             failure();
    return choiceOf(option).str();
  };
  int64_t candidates = 1;
  for (int64_t r = 0; r < ranks; ++r) {
    int64_t mine = 1;
    for (size_t l = 0; l < layersOn[r].size() && mine <= kExactCandidates; ++l)
      mine *= 3;
    candidates = std::max(candidates, mine);
  }
  if (candidates <= kExactCandidates) {
    // On one rank, per tensor: every choice when they are few, else a
    // descent from the per-layer pick (below).
    std::optional<RecomputeCandidates> tensors;
    if (ranks == 1) {
      FailureOr<RecomputeCandidates> read =
          stepRecomputeCandidates(module, options);
      if (failed(read))
        return failure();
      if (read->masksHold())
        tensors = std::move(*read);
      if (tensors && tensors->count() <= kExactTensorCandidates)
        return everyTensorChoice(*tensors, budget, costOf);
    }
    // Every per-layer choice of each rank: candidate i's low base-3 digits,
    // its first layer the lowest (a rank with fewer layers repeats its
    // choices).
    struct Best {
      double flops = 0;
      int64_t memory = 0;
      std::vector<int> option;
    };
    std::vector<std::optional<Best>> best(ranks);
    for (int64_t i = 0; i < candidates; ++i) {
      std::vector<int> option(layers, 0);
      for (int64_t r = 0; r < ranks; ++r) {
        int64_t rest = i;
        for (int64_t l : layersOn[r]) {
          option[l] = static_cast<int>(rest % 3);
          rest /= 3;
        }
      }
      FailureOr<RecomputeCost> cost = costOf(choiceOf(option));
      if (failed(cost))
        return failure();
      for (int64_t r = 0; r < ranks; ++r) {
        if (cost->memory[r] > budget)
          continue;
        double flops = cost->flops(layersOn[r]);
        std::optional<Best> &b = best[r];
        if (!b || flops < b->flops ||
            (flops == b->flops && cost->memory[r] < b->memory)) {
          b = Best{flops, cost->memory[r], {}};
          for (int64_t l : layersOn[r])
            b->option.push_back(option[l]);
        }
      }
    }
    for (int64_t r = 0; r < ranks; ++r)
      assign(chosen, r,
             best[r] ? best[r]->option
                     : std::vector<int>(layersOn[r].size(), 2));
    if (ranks > 1)
      return verified(chosen);
    // One rank: then per tensor. Every layer full, checked to fit, is
    // among the choices: best[0] is set.
    if (!tensors || !best[0])
      return choiceOf(chosen).str();
    return keepWhileItFits(*tensors, choiceOf(chosen), best[0]->flops, budget,
                           costOf);
  }

  FailureOr<RecomputeCost> selective =
      costOf(uniform(RecomputePolicy::Selective));
  if (failed(selective))
    return failure();
  const RecomputeCost *planned[kBudgetOptions] = {&*none, &*selective, &*full};
  std::vector<BudgetSteps> order;
  for (int64_t r = 0; r < ranks; ++r) {
    BudgetModel model;
    model.noneArena = double(none->memory[r]);
    double freedBy[kBudgetOptions] = {0, 0, 0};
    for (int64_t l : layersOn[r]) {
      BudgetModel::Layer layer;
      for (int o = 0; o < kBudgetOptions; ++o) {
        layer.freed[o] =
            double(none->layerBytes[l] - planned[o]->layerBytes[l]) *
            none->inFlight[r];
        layer.flops[o] = planned[o]->layerFlops[l];
        freedBy[o] += layer.freed[o];
      }
      model.layers.push_back(layer);
    }
    for (int o = 1; o < kBudgetOptions; ++o)
      model.workingSet[o] =
          std::max(0.0, planned[o]->memory[r] - (model.noneArena - freedBy[o]));
    order.push_back(orderBudgetSteps(model, double(budget)));
  }
  // Each rank's candidate k (order[r].steps.size() + 1: every layer full),
  // planned together; which ranks fit.
  auto fits = [&](llvm::ArrayRef<size_t> k) -> FailureOr<std::vector<bool>> {
    std::vector<int> option(layers, 0);
    for (int64_t r = 0; r < ranks; ++r)
      assign(option, r,
             k[r] > order[r].steps.size()
                 ? std::vector<int>(layersOn[r].size(), 2)
                 : order[r].choice(layersOn[r].size(), k[r]));
    FailureOr<RecomputeCost> cost = costOf(choiceOf(option));
    if (failed(cost))
      return failure();
    std::vector<bool> fit;
    for (int64_t r = 0; r < ranks; ++r)
      fit.push_back(cost->memory[r] <= budget);
    return fit;
  };
  // The model's pick, then per rank the first later candidate that fits:
  // misses[r] < the answer <= last[r] while bisecting.
  std::vector<size_t> misses, last, at;
  for (const BudgetSteps &o : order)
    at.push_back(o.fits);
  FailureOr<std::vector<bool>> picked = fits(at);
  if (failed(picked))
    return failure();
  std::vector<bool> settled = *picked;
  for (int64_t r = 0; r < ranks; ++r) {
    misses.push_back(at[r]);
    last.push_back(order[r].steps.size());
    if (!settled[r])
      at[r] = last[r];
  }
  if (!llvm::all_of(settled, [](bool b) { return b; })) {
    FailureOr<std::vector<bool>> lastFits = fits(at);
    if (failed(lastFits))
      return failure();
    for (int64_t r = 0; r < ranks; ++r)
      if (!settled[r] && !(*lastFits)[r]) {
        at[r] = last[r] + 1; // Every layer full.
        settled[r] = true;
      }
  }
  for (;;) {
    bool more = false;
    std::vector<size_t> mid = at;
    for (int64_t r = 0; r < ranks; ++r)
      if (!settled[r] && last[r] - misses[r] > 1) {
        mid[r] = misses[r] + (last[r] - misses[r]) / 2;
        more = true;
      }
    if (!more)
      break;
    FailureOr<std::vector<bool>> midFits = fits(mid);
    if (failed(midFits))
      return failure();
    for (int64_t r = 0; r < ranks; ++r)
      if (!settled[r] && mid[r] != at[r])
        ((*midFits)[r] ? last[r] : misses[r]) = mid[r];
    for (int64_t r = 0; r < ranks; ++r)
      if (!settled[r])
        at[r] = last[r];
  }
  for (int64_t r = 0; r < ranks; ++r)
    assign(chosen, r,
           at[r] > order[r].steps.size()
               ? std::vector<int>(layersOn[r].size(), 2)
               : order[r].choice(layersOn[r].size(), at[r]));
  return verified(chosen);
}
} // namespace

FailureOr<RecomputeCandidates>
stepRecomputeCandidates(ModuleOp module, const TrainingOptions &options) {
  OwningOpRef<ModuleOp> trial = module.clone();
  TrainingOptions none = options;
  none.recompute = "none";
  TrainingPipelineOptions pipeline;
  setPipelineOptions(pipeline, none);
  PassManager pm(module.getContext());
  if (llvm::Error e = addTrainingPasses(pm, pipeline, /*untilRecompute=*/true))
    return module.emitError(llvm::toString(std::move(e))), failure();
  if (failed(pm.run(*trial)))
    return failure();
  for (func::FuncOp f : trial->getOps<func::FuncOp>())
    if (hasBackward(f))
      return recomputeCandidates(f);
  return module.emitError("the training step has no backward"), failure();
}

LogicalResult
buildTrainingPrograms(ModuleOp module, const TrainingOptions &options,
                      function_ref<LogicalResult(PassManager &)> configure) {
  if (llvm::Expected<RecomputeChoice> choice =
          parseRecompute(options.recompute);
      !choice) {
    return module.emitError(llvm::toString(choice.takeError()));
  } else if (choice->budgetGiB) {
    if (!options.fuseAndPlan)
      return module.emitError("--recompute budget= needs the memory plan "
                              "(fuse-and-plan)");
    FailureOr<std::string> chosen =
        chooseRecomputation(module, options, *choice->budgetGiB);
    if (failed(chosen))
      return failure();
    TrainingOptions resolved = options;
    resolved.recompute = *chosen;
    return buildTrainingPrograms(module, resolved, configure);
  }
  TrainingPipelineOptions pipeline;
  setPipelineOptions(pipeline, options);
  PassManager pm(module.getContext());
  if (llvm::Error e = buildTrainingPipeline(pm, pipeline))
    return module.emitError(llvm::toString(std::move(e)));
  if (configure && failed(configure(pm)))
    return failure();
  return pm.run(module);
}

LogicalResult
lowerTrainingPrograms(ModuleOp module, const TrainingOptions &options,
                      function_ref<LogicalResult(PassManager &)> configure) {
  TrainingPipelineOptions pipeline;
  setPipelineOptions(pipeline, options);
  PassManager pm(module.getContext());
  addSchedPasses(pm, schedLoweringOf(pipeline));
  if (configure && failed(configure(pm)))
    return failure();
  return pm.run(module);
}

namespace {

/// The optimizer's settings, for the bundle's meta.
llvm::json::Object optimizerMeta(const AdamWConfig &a) {
  return llvm::json::Object{{"name", "adamw"},
                            {"beta1", a.beta1},
                            {"beta2", a.beta2},
                            {"eps", a.eps},
                            {"weight_decay", a.weightDecay},
                            {"max_grad_norm", a.maxGradNorm}};
}

/// Compiles the module's kernels for each of `archs` into
/// dir/kernels.<arch>.cubin (the same kernels, same names, as the CPU's);
/// returns the file names by architecture.
FailureOr<llvm::StringMap<std::string>>
buildCubins(ModuleOp module, llvm::StringRef dir, ArrayRef<std::string> archs) {
  llvm::StringMap<std::string> cubins;
  if (archs.empty())
    return cubins;
  FailureOr<std::string> source = codegen::emitCudaKernelSource(module);
  if (failed(source))
    return failure();
  for (const std::string &arch : archs) {
    std::string file = "kernels." + arch + ".cubin";
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    if (failed(codegen::compileCudaKernels(module.getLoc(), *source, path, arch,
                                           kernelCacheDir())))
      return failure();
    cubins[arch] = file;
  }
  return cubins;
}

/// A bundle file's XXH3-128 hash as the manifest spells it: the canonical
/// (big-endian) 16 bytes in lowercase hex.
FailureOr<std::string> hashFile(Location loc, llvm::StringRef dir,
                                llvm::StringRef file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!bytes)
    return emitError(loc, "cannot read '")
               << path << "': " << bytes.getError().message(),
           failure();
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
      (*bytes)->getBufferSize()));
  std::string hex;
  llvm::raw_string_ostream os(hex);
  os << llvm::format_hex_no_prefix(h.high64, 16)
     << llvm::format_hex_no_prefix(h.low64, 16);
  return hex;
}

} // namespace

LogicalResult
compileSchedBundle(ModuleOp module, llvm::StringRef dir,
                   const TrainingOptions &options, llvm::json::Object meta,
                   function_ref<LogicalResult(PassManager &)> configure) {
  TrainingOptions lowered = options;
  lowered.sched = true;
  // The model's FLOPs are the step's without recomputation: counted on a
  // copy lowered without it (the step itself recomputes, which HFU counts).
  std::optional<double> modelFlops;
  if (options.recompute != "none" && !options.recompute.empty()) {
    OwningOpRef<ModuleOp> plain = module.clone();
    TrainingOptions once = lowered;
    once.recompute = "none";
    if (failed(buildTrainingPrograms(*plain, once)))
      return failure();
    if (auto train = plain->lookupSymbol<sched::ScheduleOp>("train"))
      modelFlops = scheduleFlops(train);
  }
  if (failed(buildTrainingPrograms(module, lowered, configure)))
    return failure();
  meta["optimizer"] = optimizerMeta(options.adamw);
  // What one step computes over every rank (matrix FLOPs, as the cost
  // model counts them): weft-run's MFU and HFU.
  if (auto train = module.lookupSymbol<sched::ScheduleOp>("train")) {
    double hardware = scheduleFlops(train);
    meta["step_flops"] = llvm::json::Object{
        {"model", modelFlops.value_or(hardware)}, {"hardware", hardware}};
  }
  // The kernels are the bodies of the module's sched.kernel declarations.
  if (failed(buildKernelLibrary(module, dir)))
    return failure();
  FailureOr<llvm::StringMap<std::string>> cubins =
      buildCubins(module, dir, options.cudaArchs);
  if (failed(cubins))
    return failure();
  auto entry = [&](llvm::StringRef file) -> FailureOr<llvm::json::Object> {
    FailureOr<std::string> hash = hashFile(module.getLoc(), dir, file);
    if (failed(hash))
      return failure();
    return llvm::json::Object{{"file", file.str()}, {"xxh3", *hash}};
  };
  FailureOr<llvm::json::Object> cpu = entry("kernels.so");
  if (failed(cpu))
    return failure();
  llvm::json::Object kernels{{"cpu", std::move(*cpu)}};
  if (!cubins->empty()) {
    llvm::json::Object cuda;
    for (auto &[arch, file] : *cubins) {
      FailureOr<llvm::json::Object> cubin = entry(file);
      if (failed(cubin))
        return failure();
      cuda[arch] = std::move(*cubin);
    }
    kernels["cuda"] = std::move(cuda);
    kernels["source"] = "kernels.cu";
  }
  FailureOr<llvm::json::Object> manifest =
      codegen::writeSchedManifest(module, &meta, &kernels);
  if (failed(manifest))
    return failure();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.json");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(*manifest))) << "\n";
  return success();
}

std::string kernelCacheDir() {
  llvm::SmallString<256> dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(dir, home, ".cache");
  else
    return "";
  llvm::sys::path::append(dir, "weft", "kernels");
  return dir.str().str();
}

FailureOr<std::string> buildKernelLibrary(ModuleOp module,
                                          llvm::StringRef dir) {
  FailureOr<std::string> source = codegen::emitKernelSource(module);
  if (failed(source))
    return failure();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create '") << dir << "': " << ec.message(),
           failure();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "kernels.so");
  if (failed(codegen::compileKernels(module.getLoc(), *source, path,
                                     kernelCacheDir())))
    return failure();
  return path.str().str();
}

} // namespace weft

//===- Pipeline.cpp - named compiler pipelines ----------------------------===//

#include "compiler/Pipeline.h"

#include "codegen/KernelSource.h"
#include "codegen/Passes.h"
#include "passes/autodiff/Passes.h"
#include "passes/costmodel/CostModel.h"
#include "passes/fusion/Passes.h"
#include "passes/health/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/optimizer/Passes.h"
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

llvm::Error buildTrainingPipeline(OpPassManager &pm,
                                  const TrainingPipelineOptions &options) {
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
  Fp8Options fp8{options.fp8, options.fp8Keep, options.fp8MinDim,
                 options.fp8History, options.fp8Margin};
  if (llvm::Error e = checkFp8Options(fp8, "fp8"))
    return llvm::createStringError("weft-train: " +
                                   llvm::toString(std::move(e)));
  Fp8Choice fp8Choice = cantFail(parseFp8(options.fp8));
  bool delayedFp8 = fp8Choice.anyDelayed();
  if (fp8Choice.any()) {
    pm.addNestedPass<func::FuncOp>(createFp8(fp8));
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
    // Per-tensor FP8 tensors gathered for their scale move quantized; not
    // parameters ZeRO-3 gathers once a step for its micro-batches
    // (weft-gather-per-step, below), which that would undo.
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
  if (gatherPerStep)
    pm.addPass(createGatherPerStep());
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
  // GPU bundles, and sched on any target, leave no elementwise op to a
  // per-op runtime kernel.
  FuseElementwiseOptions fuse;
  fuse.singleOps = gpu || options.sched;
  programs.addPass(createFuseElementwise(fuse));
  if (!options.sched) {
    programs.addPass(createMemoryPlan());
    return llvm::Error::success();
  }
  LowerToSchedOptions lower;
  lower.target = options.target;
  lower.attentionScratchMb = options.attentionScratchMb;
  lower.fp8Storage = options.fp8Storage;
  pm.addPass(createLowerToSched(lower));
  OpPassManager &schedPrograms = pm.nest<sched::ProgramOp>();
  if (gpu) {
    if (options.overlapCollectives) {
      schedPrograms.addPass(createPrefetchGathers());
      schedPrograms.addPass(createDeferReductionReaders());
    }
    schedPrograms.addPass(createAssignStreams());
  }
  schedPrograms.addPass(createSchedPlanMemory());
  return llvm::Error::success();
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
/// What a candidate recomputation costs once planned: the largest arena
/// among `module`'s programs (the one the runtime holds; 0 if none), and
/// of the backward (the program weft-recompute marked: the step, or
/// @accumulate with micro-batches) the FLOPs its recomputation adds and,
/// per layer, what it keeps for the backward (bytes) and computes again
/// (FLOPs).
struct RecomputeCost {
  int64_t arena = 0;
  double flops = 0;
  std::vector<int64_t> layerBytes;
  std::vector<double> layerFlops;
};
RecomputeCost recomputeCost(ModuleOp module) {
  RecomputeCost cost;
  func::FuncOp backward;
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    // The runtime holds one arena, the largest program's.
    if (auto arena = f->getAttrOfType<IntegerAttr>("weft.arena_bytes"))
      cost.arena = std::max(cost.arena, arena.getInt());
    // The program that runs the backward (the step, or @accumulate with
    // micro-batches; a copy of it for the last micro-batch holds the same
    // marks).
    if (!backward && f->hasAttr(kRecomputeAttr))
      backward = f;
  }
  if (!backward)
    return cost;
  if (auto flops = backward->getAttrOfType<FloatAttr>(kRecomputeFlopsAttr))
    cost.flops = flops.getValueAsDouble();
  if (auto bytes =
          backward->getAttrOfType<DenseI64ArrayAttr>(kActivationBytesAttr))
    cost.layerBytes.assign(bytes.asArrayRef().begin(),
                           bytes.asArrayRef().end());
  if (auto flops =
          backward->getAttrOfType<DenseF64ArrayAttr>(kRecomputeLayerFlopsAttr))
    cost.layerFlops.assign(flops.asArrayRef().begin(),
                           flops.asArrayRef().end());
  return cost;
}

/// Up to this many per-layer choices (3^L: none, selective or full per
/// layer) a budget is met exactly, by planning every one.
constexpr int64_t kExactCandidates = 81;

/// How many layers (`weft.layer` of parameters) `module` has.
int64_t layersOf(ModuleOp module) {
  int64_t layers = 0;
  module.walk([&](ParamOp p) {
    if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr))
      layers = std::max(layers, l.getInt() + 1);
  });
  return layers;
}

/// Resolves `--recompute budget=G`: a per-layer choice whose largest arena
/// among the programs (the memory plan's peak, planned as the report plans
/// it) fits G GiB, adding as few FLOPs as the
/// method can tell (docs/recompute.md).
///  - With 3^L <= 81 choices (L layers) every one is planned and the one
///    adding the fewest FLOPs wins (the smaller arena on a tie): exact over
///    per-layer policies, where Checkmate solves over every tensor.
///  - With more, three uniform plannings (every layer none, selective,
///    full) give the model of passes/recompute/Budget.h: what each layer's
///    policy frees (weft.activation_bytes) and costs
///    (weft.recompute_layer_flops), and each policy's working set.
///    orderBudgetSteps orders per-layer steps and picks the first the model
///    says fits, within one layer's costliest option of the model's best.
///    That candidate is planned; if it misses, the later candidates are
///    bisected for the first that fits (every layer full, which fits, if
///    none does): at most 4 + log2(2L) plannings beyond the uniform ones.
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
    return recomputeCost(*trial);
  };
  auto budget = static_cast<int64_t>(gib * double(int64_t(1) << 30));
  FailureOr<RecomputeCost> full = costOf(uniform(RecomputePolicy::Full));
  if (failed(full))
    return failure();
  if (full->arena > budget)
    return module.emitError("--recompute ")
               << options.recompute
               << ": even recomputing every layer fully needs "
               << llvm::formatv("{0:F2}",
                                full->arena / double(int64_t(1) << 30))
               << " GiB of activations (the memory plan's largest arena); "
                  "raise the budget or split the model over more ranks",
           failure();
  FailureOr<RecomputeCost> none = costOf(uniform(RecomputePolicy::None));
  if (failed(none))
    return failure();
  if (none->arena <= budget)
    return uniform(RecomputePolicy::None).str();
  int64_t candidates = 1;
  for (int64_t l = 0; l < layers && candidates <= kExactCandidates; ++l)
    candidates *= 3;
  if (candidates <= kExactCandidates) {
    // Every per-layer choice, layer 0 the lowest base-3 digit.
    std::optional<std::pair<RecomputeCost, std::string>> best;
    for (int64_t i = 0; i < candidates; ++i) {
      RecomputeChoice c;
      for (int64_t l = 0, rest = i; l < layers; ++l, rest /= 3)
        c.layers.push_back(std::array{RecomputePolicy::None,
                                      RecomputePolicy::Selective,
                                      RecomputePolicy::Full}[rest % 3]);
      FailureOr<RecomputeCost> cost = costOf(c);
      if (failed(cost))
        return failure();
      if (cost->arena > budget)
        continue;
      if (!best || cost->flops < best->first.flops ||
          (cost->flops == best->first.flops && cost->arena < best->first.arena))
        best = {*cost, c.str()};
    }
    if (best) // Full everywhere fits, checked above.
      return best->second;
  }

  FailureOr<RecomputeCost> selective =
      costOf(uniform(RecomputePolicy::Selective));
  if (failed(selective))
    return failure();
  const RecomputeCost *planned[kBudgetOptions] = {&*none, &*selective, &*full};
  const char *names[kBudgetOptions] = {"none", "selective", "full"};
  for (int o = 0; o < kBudgetOptions; ++o)
    if (static_cast<int64_t>(planned[o]->layerBytes.size()) != layers ||
        static_cast<int64_t>(planned[o]->layerFlops.size()) != layers)
      return module.emitError("--recompute ")
                 << options.recompute << ": under " << names[o]
                 << " the backward records "
                 << static_cast<int64_t>(planned[o]->layerBytes.size())
                 << " layers' activations and "
                 << static_cast<int64_t>(planned[o]->layerFlops.size())
                 << " layers' FLOPs, but the model has " << layers
                 << " layers; give a policy per layer",
             failure();
  BudgetModel model;
  model.noneArena = double(none->arena);
  model.layers.resize(layers);
  double freedBy[kBudgetOptions] = {0, 0, 0};
  for (int64_t l = 0; l < layers; ++l)
    for (int o = 0; o < kBudgetOptions; ++o) {
      model.layers[l].freed[o] =
          double(none->layerBytes[l] - planned[o]->layerBytes[l]);
      model.layers[l].flops[o] = planned[o]->layerFlops[l];
      freedBy[o] += model.layers[l].freed[o];
    }
  for (int o = 1; o < kBudgetOptions; ++o)
    model.workingSet[o] =
        std::max(0.0, planned[o]->arena - (model.noneArena - freedBy[o]));
  BudgetSteps order = orderBudgetSteps(model, double(budget));
  auto candidate = [&](size_t k) {
    RecomputeChoice c;
    for (int option : order.choice(layers, k))
      c.layers.push_back(budgetPolicy(option));
    return c;
  };
  auto fits = [&](size_t k) -> FailureOr<bool> {
    FailureOr<RecomputeCost> cost = costOf(candidate(k));
    if (failed(cost))
      return failure();
    return cost->arena <= budget;
  };
  // The model's pick, then the first later candidate that fits.
  size_t misses = order.fits, last = order.steps.size();
  FailureOr<bool> picked = fits(misses);
  if (failed(picked))
    return failure();
  if (*picked)
    return candidate(misses).str();
  FailureOr<bool> lastFits = fits(last);
  if (failed(lastFits))
    return failure();
  if (!*lastFits)
    return uniform(RecomputePolicy::Full).str();
  while (last - misses > 1) {
    size_t mid = misses + (last - misses) / 2;
    FailureOr<bool> midFits = fits(mid);
    if (failed(midFits))
      return failure();
    (*midFits ? last : misses) = mid;
  }
  return candidate(last).str();
}
} // namespace

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
    // A pipeline's stages run their backward in programs of their own,
    // each with its own micro-batches in flight; the search reads one
    // backward's arena.
    if (options.plan.size("pp") > 1)
      return module.emitError("--recompute ")
             << options.recompute
             << " is not supported with pp: give a policy per layer, or "
                "--plan auto, which chooses one per pipeline rank";
    FailureOr<std::string> chosen =
        chooseRecomputation(module, options, *choice->budgetGiB);
    if (failed(chosen))
      return failure();
    TrainingOptions resolved = options;
    resolved.recompute = *chosen;
    return buildTrainingPrograms(module, resolved, configure);
  }
  TrainingPipelineOptions pipeline;
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
  pipeline.fp8History = options.fp8.history;
  pipeline.fp8Margin = options.fp8.margin;
  pipeline.fp8Storage = options.fp8Storage;
  pipeline.probes = options.probes;
  PassManager pm(module.getContext());
  if (llvm::Error e = buildTrainingPipeline(pm, pipeline))
    return module.emitError(llvm::toString(std::move(e)));
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

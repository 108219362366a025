//===- Planning.cpp - the planner's slices, compiled
//-----------------------===//

#include "compiler/Planning.h"

#include "dialects/sched/IR/SchedOps.h"
#include "dialects/weft/IR/WeftOps.h"
#include "passes/costmodel/CostModel.h"
#include "passes/costmodel/Report.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/Schedule.h"
#include "passes/precision/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <memory>
#include <tuple>

using namespace mlir;

namespace weft {
namespace {

using planner::PartCost;

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Collects the diagnostics a slice's compilation emits, so a
/// configuration that cannot be built says why instead of printing.
struct Captured {
  explicit Captured(MLIRContext &context)
      : handler(&context, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && text.empty())
            text = d.str();
          return success();
        }) {}
  ScopedDiagnosticHandler handler;
  std::string text;
};

int64_t bytesOf(llvm::StringRef dtype) { return dtype == "f32" ? 4 : 2; }

/// Where the slices come from: a config, which the frontends build with any
/// number of layers at any batch, or a model read from .mlir, which is cut
/// to the layers (weft-slice-layers) and rewritten at the batch
/// (weft-rebatch).
struct SliceSource {
  const ModelConfig *config = nullptr;
  mutable ModuleOp module; // An op handle: cloning it is not a change.
  int64_t seq = 0;
  std::string dtype;
  /// The residual stream's width and element size (the pipeline's
  /// boundary).
  int64_t hidden = 0, elementBytes = 4;
  /// A graph's layer kinds when its layers differ (ModelShape::layerKinds).
  std::vector<int64_t> kinds;
  /// A graph cut to each set of layers, at its own batch: a slice clones
  /// the cut (a few layers), not the whole model.
  std::shared_ptr<std::map<std::vector<int64_t>, OwningOpRef<ModuleOp>>> cuts =
      std::make_shared<std::map<std::vector<int64_t>, OwningOpRef<ModuleOp>>>();

  /// The first layer of kind `kind` after layer `after`.
  int64_t next(int64_t kind, int64_t after) const {
    for (int64_t l = after + 1; l < static_cast<int64_t>(kinds.size()); ++l)
      if (kinds[l] == kind)
        return l;
    return after + 1; // Alike layers: the next.
  }

  /// The model with the layers `keep` (rising from 0; a config's: the
  /// first ones) at `sequences` sequences a micro-batch.
  /// A capacity-limited expert's capacity is that of `routing` times the
  /// sequences (ModelBuildOptions::capacityGroup).
  llvm::Expected<OwningOpRef<ModuleOp>>
  build(MLIRContext &context, ArrayRef<int64_t> keep, int64_t sequences,
        int64_t vocabMultiple, int64_t routing,
        llvm::function_ref<std::string()> why) const {
    if (config) {
      assert(keep.back() + 1 == static_cast<int64_t>(keep.size()) &&
             "a config's slices are its first layers");
      ModelConfig cut = *config;
      cut.numLayers = static_cast<int64_t>(keep.size());
      ModelBuildOptions build{sequences, seq, dtype};
      build.masterWeights = true;
      build.vocabMultiple = vocabMultiple;
      build.capacityGroup = routing;
      return buildModel(context, cut, build);
    }
    OwningOpRef<ModuleOp> &layers = (*cuts)[keep.vec()];
    if (!layers) {
      OwningOpRef<ModuleOp> cut = module.clone();
      if (failed(sliceLayers(cut->lookupSymbol<func::FuncOp>("forward"), keep)))
        return fail("cannot cut @forward to " + llvm::Twine(keep.size()) +
                    " layer(s)" + why());
      layers = std::move(cut);
    }
    OwningOpRef<ModuleOp> cut = layers->clone();
    auto forward = cut->lookupSymbol<func::FuncOp>("forward");
    if (failed(rebatch(forward, sequences, routing)))
      return fail("cannot rewrite @forward at " + llvm::Twine(sequences) +
                  " sequence(s)" + why());
    return std::move(cut);
  }
};

/// What a slice of two layers cut into two pipeline stages holds per rank:
/// the stash one micro-batch leaves on the first stage (a layer's, the
/// embedding's output aside), and each stage's arena (the largest of its
/// forward's, backward's and step's, which share it).
struct StageMemory {
  double stash = 0, firstArena = 0, lastArena = 0;
};

/// A slice of the layers `keep` compiled for `key`: what one rank of it
/// costs for a micro-batch of `batch` sequences. With `stages`, placed only
/// (as two pipeline stages, for StageMemory), not timed.
llvm::Expected<PartCost>
compileSlice(MLIRContext &context, const SliceSource &source,
             ArrayRef<int64_t> keep, int64_t batch, const Topology &topology,
             const TrainingOptions &base, bool cuda,
             const planner::SliceKey &key, StageMemory *stages = nullptr) {
  Captured errors(context);
  // Each ep rank routes its own sequences: the micro-batch is ep times one
  // rank's.
  auto built =
      source.build(context, keep, batch * key.ep, key.tp, key.routing, [&] {
        return errors.text.empty() ? std::string() : ": " + errors.text;
      });
  if (!built)
    return built.takeError();
  std::string planText = stages ? "pp=2," : "";
  if (key.ep > 1)
    planText += "ep=" + std::to_string(key.ep) + ",";
  if (key.cp > 1)
    planText += "cp=" + std::to_string(key.cp) + ",";
  if (key.tp > 1)
    planText += "tp=" + std::to_string(key.tp) + ",";
  if (key.sequenceParallel)
    planText += "sp=on,";
  planText += "mb=2";
  llvm::Expected<Plan> plan = parsePlan(planText);
  if (!plan)
    return plan.takeError();
  TrainingOptions options = base;
  options.plan = *plan;
  options.recompute = key.recompute;
  options.fp8.recipe = key.fp8;
  options.keepGradients = false;
  options.probes.clear();
  if (cuda && options.cudaArchs.empty())
    options.cudaArchs = {"sm_90"};
  if (!cuda)
    options.cudaArchs.clear();
  auto failed = [&](const char *what) {
    return fail(llvm::Twine(what) + ": " +
                (errors.text.empty() ? "the pipeline failed" : errors.text));
  };
  // The memory report reads the placed weft programs; the times the sched
  // ones.
  OwningOpRef<ModuleOp> placed = std::move(*built);
  options.sched = false;
  if (mlir::failed(buildTrainingPrograms(*placed, options)))
    return failed("placing");
  FailureOr<PlacementReport> report = estimatePlacement(*placed);
  if (mlir::failed(report) || report->ranks.empty())
    return failed("estimating memory");
  if (stages) {
    if (!report->pipeline || report->pipeline->stages.size() != 2)
      return fail("the two-stage slice has no pipeline estimate");
    const RankEstimate &first = report->pipeline->stages[0],
                       &last = report->pipeline->stages[1];
    auto arenas = [](const RankEstimate &r) {
      return double(r.activationBytes) -
             double(r.stashBytes) * double(r.inFlight);
    };
    stages->stash = double(first.stashBytes);
    stages->firstArena = arenas(first);
    stages->lastArena = arenas(last);
    return PartCost();
  }
  // The placed programs lowered as a bundle's are (weft-sched-arenas
  // lowered a copy of them for their arenas).
  OwningOpRef<ModuleOp> lowered = placed->clone();
  if (mlir::failed(lowerTrainingPrograms(*lowered, options)))
    return failed("lowering");
  std::map<std::string, ProgramEstimate> programs;
  for (auto program : lowered->getOps<sched::ProgramOp>()) {
    FailureOr<ProgramEstimate> e = estimateProgram(program, topology);
    if (mlir::failed(e))
      return failed("timing");
    programs[e->program] = std::move(*e);
  }
  for (const char *name : {"forward", "accumulate", "step"})
    if (!programs.count(name))
      return fail(llvm::Twine("the slice has no program @") + name);
  auto flops = [&](const char *name) {
    double sum = 0;
    for (const ProgramEstimate::Row &row : programs[name].rows)
      sum += row.flops;
    return sum;
  };
  const RankEstimate &rank = report->ranks.front();
  PartCost cost;
  cost.forward = programs["forward"].seconds;
  cost.backward = programs["accumulate"].seconds - cost.forward;
  // The update's own kernels: a slice over ep or cp already reduces its
  // gradients over them in @step, which the planner counts itself.
  for (const ProgramEstimate::Row &row : programs["step"].rows)
    if (row.link.empty())
      cost.optimizer += row.seconds;
  cost.paramBytes = double(rank.paramBytes);
  cost.gradBytes = double(rank.gradBytes);
  cost.optimizerBytes = double(rank.optimizerBytes);
  // The kept layers' (a dropped one's entry is 0).
  for (int64_t bytes : report->layerActivationBytes)
    cost.activationBytes += double(bytes);
  // The arenas of the placed programs (the memory plan's), apart: the
  // forward and backward's and the update's peak at different times.
  auto arena = [&](const char *name) {
    auto func = placed->lookupSymbol<func::FuncOp>(name);
    auto bytes =
        func ? func->getAttrOfType<IntegerAttr>("weft.arena_bytes") : nullptr;
    return bytes ? double(bytes.getInt()) : double(rank.activationBytes);
  };
  // The last micro-batch's copy (@accumulate_last) may hold more: its
  // reductions' buckets live to the end of its backward.
  double working = arena("accumulate");
  if (placed->lookupSymbol<func::FuncOp>(kAccumulateLastFunc))
    working = std::max(working, arena(kAccumulateLastFunc));
  cost.workingBytes = working - cost.activationBytes;
  cost.updateBytes = arena("step");
  cost.flops = flops("accumulate");
  cost.modelFlops = 3 * flops("forward");
  if (auto step = placed->lookupSymbol<func::FuncOp>("step"))
    step.walk([&](ParamOp param) {
      cost.tensors += param->hasAttr("weft.grad_elements");
      // An expert's gradient accumulator: split over ep.
      auto split = param->getAttrOfType<ShardingAttr>(kShardOfAttr);
      if (!param.getName().ends_with(".grad_acc") || !split)
        return;
      bool overEp = false;
      for (Attribute dim : split.getDims())
        for (Attribute axis : cast<ArrayAttr>(dim))
          overEp |= cast<StringAttr>(axis).getValue() == "ep";
      if (!overEp)
        return;
      auto type = cast<ShapedType>(param.getType());
      cost.expertGradBytes += double(type.getNumElements()) *
                              double(type.getElementTypeBitWidth() / 8);
      cost.expertTensors += 1;
    });
  return cost;
}

/// a - b, field by field.
PartCost minus(const PartCost &a, const PartCost &b) {
  PartCost d;
  d.forward = a.forward - b.forward;
  d.backward = a.backward - b.backward;
  d.optimizer = a.optimizer - b.optimizer;
  d.paramBytes = a.paramBytes - b.paramBytes;
  d.gradBytes = a.gradBytes - b.gradBytes;
  d.optimizerBytes = a.optimizerBytes - b.optimizerBytes;
  d.activationBytes = a.activationBytes - b.activationBytes;
  d.workingBytes = a.workingBytes - b.workingBytes;
  d.updateBytes = a.updateBytes - b.updateBytes;
  d.tensors = a.tensors - b.tensors;
  d.expertGradBytes = a.expertGradBytes - b.expertGradBytes;
  d.expertTensors = a.expertTensors - b.expertTensors;
  d.flops = a.flops - b.flops;
  d.modelFlops = a.modelFlops - b.modelFlops;
  return d;
}

} // namespace

planner::ModelShape modelShape(const ModelConfig &config, int64_t batch,
                               int64_t seq, llvm::StringRef dtype) {
  planner::ModelShape shape;
  shape.layers = config.numLayers;
  shape.heads = config.numHeads;
  shape.kvHeads = config.numKvHeads > 0 ? config.numKvHeads : config.numHeads;
  shape.hidden = config.hiddenSize;
  shape.vocab = config.vocabSize;
  shape.experts = config.numExperts;
  shape.capacityLimited = config.numExperts > 1 && config.capacityFactor > 0;
  shape.batch = batch;
  shape.seq = seq;
  shape.narrow = dtype != "f32";
  return shape;
}

namespace {
planner::ProfileFn profilerOf(MLIRContext &context, SliceSource source,
                              const Topology &topology,
                              const TrainingOptions &base, bool cuda) {
  // Per (tp, sp, ep, cp, micro-batch, routing): the plain layer and the
  // rest.
  using Key = std::tuple<int64_t, bool, int64_t, int64_t, int64_t, int64_t>;
  struct Plain {
    /// The layer, the rest, and with layer kinds a layer of each.
    std::map<Key, std::tuple<PartCost, PartCost, std::vector<PartCost>>> parts;
    std::map<Key, std::string> failures;
    /// Per pipelined key at one sequence: the two-stage slice's memory and
    /// the one-layer slice's arena it was measured beside.
    std::map<planner::SliceKey, std::pair<StageMemory, double>> stages;
  };
  auto plain = std::make_shared<Plain>();
  // The function asks itself for a pipelined key's one-sequence profile:
  // it lives in `fn`, which the returned wrapper owns.
  auto fn = std::make_shared<planner::ProfileFn>();
  planner::ProfileFn *selfFn = fn.get();
  *fn = [&context, source, &topology, &base, cuda, plain,
         selfFn](const planner::SliceKey &key)
      -> llvm::Expected<planner::SliceProfile> {
    auto self = [&](const planner::SliceKey &k) { return (*selfFn)(k); };
    auto compile = [&](ArrayRef<int64_t> keep, const planner::SliceKey &k) {
      return compileSlice(context, source, keep, k.microbatch, topology, base,
                          cuda, k);
    };
    // Layer 0 and another of kind `kind` (its first after layer 0): what
    // that slice adds to layer 0 alone is a layer of the kind.
    auto pair = [&](int64_t kind) {
      return std::vector<int64_t>{0, source.next(kind, 0)};
    };
    const int64_t kindCount =
        source.kinds.empty() ? 1 : *llvm::max_element(source.kinds) + 1;
    Key at{key.tp, key.sequenceParallel, key.ep,
           key.cp, key.microbatch,       key.routing};
    // A layout that does not build fails once, for every policy and recipe.
    if (auto failed = plain->failures.find(at); failed != plain->failures.end())
      return fail(failed->second);
    auto found = plain->parts.find(at);
    if (found == plain->parts.end()) {
      planner::SliceKey none = key;
      none.recompute = "none";
      none.fp8 = "none";
      auto remember = [&](llvm::Error error) {
        std::string text = llvm::toString(std::move(error));
        plain->failures[at] = text;
        return fail(text);
      };
      llvm::Expected<PartCost> one = compile({0}, none);
      if (!one)
        return remember(one.takeError());
      // A layer is what the second adds, its working set included (the
      // weights' compute-type copies grow with layers); the rest is the
      // remainder of the one-layer slice.
      std::vector<PartCost> kinds;
      for (int64_t kind = 0; kind < kindCount; ++kind) {
        llvm::Expected<PartCost> two = compile(pair(kind), none);
        if (!two)
          return remember(two.takeError());
        kinds.push_back(minus(*two, *one));
      }
      PartCost layer = kinds.front();
      if (source.kinds.empty())
        kinds.clear();
      found = plain->parts
                  .emplace(at, std::make_tuple(layer, minus(*one, layer),
                                               std::move(kinds)))
                  .first;
    }
    const auto &[layer, rest, plainKinds] = found->second;
    planner::SliceProfile profile;
    profile.layer = layer;
    profile.rest = rest;
    profile.kinds = plainKinds;
    // The CUDA lowering gives collectives their own stream; the CPU's run
    // in order on one.
    profile.overlapsCommunication = cuda;
    profile.overlapsCollectives = cuda && base.overlapCollectives;
    if (key.recompute != "none" || key.fp8 != "none") {
      // Recomputation and FP8 change what a layer keeps and costs, not its
      // parameters (FP8's scales aside), its weights' copies or the rest.
      llvm::Expected<PartCost> one = compile({0}, key);
      if (!one)
        return one.takeError();
      profile.layer = minus(*one, rest);
      profile.layer.activationBytes = one->activationBytes;
      profile.layer.workingBytes = layer.workingBytes;
      profile.layer.updateBytes = layer.updateBytes;
      for (int64_t kind = 1; kind < static_cast<int64_t>(plainKinds.size());
           ++kind) {
        llvm::Expected<PartCost> two = compile(pair(kind), key);
        if (!two)
          return two.takeError();
        PartCost &k = profile.kinds[kind];
        k = minus(*two, *one);
        k.workingBytes = plainKinds[kind].workingBytes;
        k.updateBytes = plainKinds[kind].updateBytes;
      }
      if (!profile.kinds.empty())
        profile.kinds.front() = profile.layer;
    }
    if (key.pipelined) {
      // The stash and the stages' arenas, from the two layers as two
      // pipeline stages with this key's policy, at one sequence a
      // micro-batch; larger ones scale them as the one-layer slice's arena
      // grows (placing once per size would double the search's compiles).
      planner::SliceKey one = key;
      one.microbatch = 1;
      auto [it, fresh] = plain->stages.try_emplace(one);
      if (fresh) {
        llvm::Expected<PartCost> placed =
            compileSlice(context, source, pair(0), one.microbatch, topology,
                         base, cuda, one, &it->second.first);
        if (!placed) {
          plain->stages.erase(it);
          return placed.takeError();
        }
      }
      auto arena = [](const planner::SliceProfile &p) {
        return p.rest.workingBytes + p.layer.workingBytes +
               p.layer.activationBytes;
      };
      if (fresh)
        it->second.second =
            key.microbatch == one.microbatch ? arena(profile) : 0;
      if (it->second.second == 0 && key.microbatch != one.microbatch) {
        llvm::Expected<planner::SliceProfile> single = self(one);
        if (!single)
          return single.takeError();
        it->second.second = arena(*single);
      }
      const StageMemory &stages = it->second.first;
      double grow = it->second.second > 0
                        ? std::max(1.0, arena(profile) / it->second.second)
                        : double(key.microbatch);
      profile.layer.stashBytes =
          stages.stash * double(key.microbatch / one.microbatch);
      // Another kind's stash: the first's, as their activations compare.
      for (planner::PartCost &k : profile.kinds)
        k.stashBytes = profile.layer.activationBytes > 0
                           ? profile.layer.stashBytes * k.activationBytes /
                                 profile.layer.activationBytes
                           : profile.layer.stashBytes;
      profile.firstStageArena = stages.firstArena * grow;
      profile.lastStageArena = stages.lastArena * grow;
      profile.pipelined = true;
    }
    profile.boundaryBytes =
        double(key.microbatch) * double(source.seq) * double(source.hidden) *
        double(source.elementBytes) /
        double(key.sequenceParallel ? key.tp : 1) / double(key.cp);
    return profile;
  };
  return [fn](const planner::SliceKey &key) { return (*fn)(key); };
}
} // namespace

llvm::Expected<planner::ModelShape> modelShape(ModuleOp model, int64_t batch) {
  auto forward = model.lookupSymbol<func::FuncOp>("forward");
  auto tokens = forward && !forward.isExternal() && forward.getNumArguments()
                    ? dyn_cast<RankedTensorType>(forward.getArgumentTypes()[0])
                    : RankedTensorType();
  if (!tokens || tokens.getRank() != 2 || !tokens.hasStaticShape() ||
      !tokens.getElementType().isInteger() || tokens.getNumElements() == 0)
    return fail("the planner needs @forward taking [batch, seq] integer "
                "token ids first, neither empty");
  planner::ModelShape shape;
  int64_t micro = tokens.getDimSize(0);
  shape.seq = tokens.getDimSize(1);
  shape.batch = batch ? batch : micro;
  FailureOr<int64_t> layers =
      countLayers(forward.getBody().front(), "the planner");
  if (failed(layers))
    return fail("a parameter has a negative weft.layer");
  shape.layers = *layers;
  shape.narrow = false;
  shape.hidden = 0;
  forward.walk([&](Operation *op) {
    if (auto att = dyn_cast<AttentionOp>(op); att && shape.heads == 1) {
      // q: [B, S, H, D], k: [B, T, Hkv, D].
      shape.heads = cast<ShapedType>(att.getQuery().getType()).getDimSize(2);
      shape.kvHeads = cast<ShapedType>(att.getKey().getType()).getDimSize(2);
    } else if (auto e = dyn_cast<EmbeddingOp>(op); e && !shape.hidden) {
      auto table = cast<ShapedType>(e.getTable().getType());
      shape.vocab = table.getDimSize(0);
      shape.hidden = table.getDimSize(1);
    } else if (auto route = dyn_cast<ExpertRouteOp>(op)) {
      shape.experts = route.getNumExperts();
      shape.capacityLimited |= route.getCapacity().has_value();
    } else if (auto mm = dyn_cast<MatmulOp>(op)) {
      shape.narrow |= !mm.getLhs().getType().getElementType().isF32();
    }
  });
  if (shape.layers == 0)
    return fail("no parameter of @forward carries weft.layer: the planner "
                "times a model by its layers");
  if (!shape.hidden)
    return fail("@forward embeds no tokens (weft.embedding): the planner "
                "reads the residual stream's width from the table");
  // Where weft-slice-layers fails (its error printed), every slice would.
  FailureOr<std::vector<int64_t>> kinds = layerKinds(forward);
  if (failed(kinds))
    return fail("cannot find where one layer ends and the next begins");
  if (llvm::any_of(*kinds, [](int64_t k) { return k != 0; })) {
    // A layer of each kind is timed against layer 0 alone, and layer 0's
    // kind against another of it.
    if (llvm::count(*kinds, 0) < 2)
      return fail("layer 0 is the only one of its kind (its ops or shapes): "
                  "the planner cannot tell its cost from the embedding's "
                  "and the head's");
    shape.layerKinds = std::move(*kinds);
  }
  // A graph weft-rebatch cannot rewrite at another size (its error
  // printed) is refused before the search, not slice by slice.
  OwningOpRef<ModuleOp> trial = model.clone();
  auto cut = trial->lookupSymbol<func::FuncOp>("forward");
  if (shape.layers > 1 && failed(sliceLayers(cut, 1)))
    return fail("cannot cut @forward to one layer");
  if (failed(rebatch(cut, micro == 1 ? 2 : 1)))
    return fail("cannot rewrite @forward at another micro-batch size");
  return shape;
}

planner::ProfileFn sliceProfiler(MLIRContext &context,
                                 const ModelConfig &config, int64_t seq,
                                 const std::string &dtype,
                                 const Topology &topology,
                                 const TrainingOptions &base, bool cuda) {
  SliceSource source;
  source.config = &config;
  source.seq = seq;
  source.dtype = dtype;
  source.hidden = config.hiddenSize;
  source.elementBytes = bytesOf(dtype);
  return profilerOf(context, std::move(source), topology, base, cuda);
}

planner::ProfileFn sliceProfiler(MLIRContext &context, ModuleOp model,
                                 const planner::ModelShape &shape,
                                 const Topology &topology,
                                 const TrainingOptions &base, bool cuda) {
  SliceSource source;
  source.module = model;
  source.seq = shape.seq;
  source.hidden = shape.hidden;
  source.kinds = shape.layerKinds;
  // The stream's type: what the first embedding gathers.
  model.walk([&](EmbeddingOp op) {
    source.elementBytes =
        cast<ShapedType>(op.getTable().getType()).getElementTypeBitWidth() / 8;
    return WalkResult::interrupt();
  });
  return profilerOf(context, std::move(source), topology, base, cuda);
}

llvm::Expected<planner::Candidate> candidateFor(const Plan &plan, int64_t batch,
                                                int64_t layers,
                                                const std::string &recompute,
                                                const std::string &fp8) {
  if (recompute != "none" && recompute != "selective" && recompute != "full")
    return fail("a plan is predicted with one --recompute for every layer "
                "(none, selective or full), not '" +
                recompute + "'");
  llvm::Expected<Fp8Choice> choice = parseFp8(fp8);
  if (!choice)
    return choice.takeError();
  if (!choice->layers.empty())
    return fail("a plan is predicted with one --fp8 recipe for every layer, "
                "not '" +
                fp8 + "'");
  planner::Candidate c;
  c.tp = plan.size("tp");
  c.pp = plan.size("pp");
  c.dp = plan.size("dp");
  c.ep = plan.size("ep");
  c.cp = plan.size("cp");
  c.sequenceParallel = plan.sequenceParallel;
  c.zero = plan.zero;
  c.microbatches = plan.microbatches;
  if (batch % (c.dp * c.ep * c.microbatches) != 0)
    return fail(llvm::formatv("a batch of {0} does not split into dp={1} x "
                              "ep={2} x microbatches={3}",
                              batch, c.dp, c.ep, c.microbatches));
  c.microbatchSize = batch / (c.dp * c.ep * c.microbatches);
  c.schedule = plan.schedule;
  c.chunks = plan.chunks;
  c.uniformRecompute = recompute;
  c.fp8 = fp8;
  if (c.pp > 1) {
    // What weft-pipeline-split would refuse: the schedule's own
    // constraints and stage ranges that do not cover the layers.
    llvm::Expected<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(c.schedule);
    llvm::Expected<pipeline::ScheduleTable> table =
        kind ? pipeline::buildSchedule(*kind, c.pp, c.microbatches, c.chunks)
             : kind.takeError();
    if (!table)
      return table.takeError();
    if (c.pp * c.chunks > layers)
      return fail(llvm::formatv("pp={0} x virtual={1} stages for {2} layers",
                                c.pp, c.chunks, layers));
    if (!plan.stages.empty()) {
      auto ranges = parseStageBoundaries(plan.stages, layers, c.pp * c.chunks);
      if (!ranges)
        return ranges.takeError();
      c.stageRanges = std::move(*ranges);
    }
  }
  return c;
}

} // namespace weft

//===- Report.cpp - per-rank memory and communication estimate ------------===//

#include "passes/costmodel/Report.h"

#include "passes/costmodel/CostModel.h"
#include "passes/costmodel/Topology.h"
#include "passes/pipeline/Names.h"
#include "passes/pipeline/Schedule.h"
#include "passes/precision/Fp8Codes.h"

#include "dialects/weft/IR/WeftOps.h"
#include "passes/memory/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft {
namespace {
int64_t elementsOf(Type type) {
  return cast<RankedTensorType>(type).getNumElements();
}

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// Whether FP8 storage moves all-gather `g`'s quantized values as one-byte
/// codes (gathersFp8Codes: codegen's rule, for GEMMs' codes or encoded).
bool movesFp8Codes(AllGatherOp g) {
  auto q = g.getInput().getDefiningOp<Fp8QuantizeOp>();
  return q && gathersFp8Codes(q);
}

/// Bytes one rank sends for `op` on a ring of its group (CostModel.h's
/// rule, as the sched program's collectives are costed); with `fp8Codes`
/// (FP8 storage) a gather of quantized values movesFp8Codes counts one
/// byte an element, its scales left out (a float per tensor, row or
/// block: an eighth of a byte an element at most, MXFP8's).
double ringBytes(Operation *op, bool fp8Codes) {
  using Kind = sched::CollectiveKind;
  if (auto r = dyn_cast<AllReduceOp>(op)) {
    double bytes = 0;
    for (Value v : r.getInputs())
      bytes += bytesOf(v);
    return collectiveSendBytes(Kind::all_reduce, bytes, bytes, r.groupSize());
  }
  if (auto g = dyn_cast<AllGatherOp>(op)) {
    if (fp8Codes && movesFp8Codes(g))
      return collectiveSendBytes(
          Kind::all_gather, elementsOf(g.getInput().getType()),
          elementsOf(g.getResult().getType()), g.groupSize());
    return collectiveSendBytes(Kind::all_gather, bytesOf(g.getInput()),
                               bytesOf(g.getResult()), g.groupSize());
  }
  if (auto s = dyn_cast<ReduceScatterOp>(op))
    return collectiveSendBytes(Kind::reduce_scatter, bytesOf(s.getInput()),
                               bytesOf(s.getResult()), s.groupSize());
  // At most: the rows actually routed are known only at run time.
  if (auto r = dyn_cast<RaggedAllToAllOp>(op))
    return collectiveSendBytes(Kind::all_to_all, bytesOf(r.getInput()),
                               bytesOf(r.getResult()), r.groupSize());
  if (auto a = dyn_cast<AllToAllOp>(op))
    return collectiveSendBytes(Kind::all_to_all, bytesOf(a.getInput()),
                               bytesOf(a.getResult()), a.groupSize());
  return 0;
}

/// How many ways `param` is split across ranks (its `weft.shard_of`),
/// counting only `onlyAxis` when given.
int64_t splitOf(ParamOp param, StringRef onlyAxis = "") {
  auto sharding = param->getAttrOfType<ShardingAttr>(weft::kShardOfAttr);
  if (!sharding)
    return 1;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(param, sharding.getMesh());
  int64_t n = 1;
  for (Attribute dim : sharding.getDims())
    for (StringRef axis : cast<ArrayAttr>(dim).getAsValueRange<StringAttr>())
      if (onlyAxis.empty() || axis == onlyAxis)
        n *= mesh ? mesh.axisSize(axis) : 1;
  return n;
}

std::string mib(int64_t bytes) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (bytes >= (int64_t(1) << 30))
    os << llvm::format("%.2f GiB", bytes / double(1 << 30));
  else
    os << llvm::format("%.2f MiB", bytes / double(1 << 20));
  return out;
}
} // namespace

namespace {
/// What one rank holds for the optimizer step `step` (planned): its
/// parameters, gradients (their accumulators when there are any) and
/// optimizer state, the step's arena and its collectives' bytes.
FailureOr<RankEstimate> estimateStep(func::FuncOp step, int64_t &parameters,
                                     bool fp8Codes) {
  if (!step || !step->hasAttr("weft.arena_bytes"))
    return failure();
  RankEstimate estimate;
  llvm::StringMap<ParamOp> byName;
  for (ParamOp p : step.getBody().front().getOps<ParamOp>())
    byName[p.getName()] = p;
  for (ParamOp p : step.getBody().front().getOps<ParamOp>()) {
    if (p.getState())
      continue;
    int64_t local = elementsOf(p.getType());
    parameters += local * splitOf(p);
    // Compute precision: the cast the model applies to its master, if any.
    Type compute = p.getType().getElementType();
    bool master = false;
    for (Operation *user : p->getUsers())
      if (auto castOp = dyn_cast<CastOp>(user)) {
        compute = castOp.getType().getElementType();
        master = true;
      }
    int64_t width = elementBytes(compute);
    // Under ZeRO-1/2 (an optimizer split) a master weight is stored split
    // but its compute-type copy is gathered whole for the step; ZeRO-3
    // gathers it per use.
    int64_t held = local;
    if (auto split = p->getAttrOfType<ShardingAttr>(weft::kOptimizerShardAttr))
      for (Attribute dim : split.getDims())
        for (StringRef axis :
             cast<ArrayAttr>(dim).getAsValueRange<StringAttr>())
          held *= splitOf(p, axis);
    estimate.paramBytes += held * width;
    auto grads = p->getAttrOfType<IntegerAttr>(weft::kGradElementsAttr);
    estimate.gradBytes += (grads ? grads.getInt() : local) * width;
    ParamOp moment = byName.lookup((p.getName() + ".exp_avg").str());
    int64_t state = moment ? elementsOf(moment.getType()) : local;
    estimate.optimizerBytes += state * (master ? 12 : 8);
  }
  estimate.activationBytes =
      step->getAttrOfType<IntegerAttr>("weft.arena_bytes").getInt();
  double comm = 0;
  step.walk([&](Operation *op) { comm += ringBytes(op, fp8Codes); });
  estimate.commBytes = static_cast<int64_t>(comm);
  // With micro-batches the gradients persist in their accumulators, which
  // replace the count above (the step's gradients are their means, in its
  // arena).
  int64_t accumulators = 0;
  for (ParamOp p : step.getBody().front().getOps<ParamOp>())
    if (p.getName().ends_with(kGradAccumulatorSuffix))
      accumulators +=
          elementsOf(p.getType()) * elementBytes(p.getType().getElementType());
  if (accumulators)
    estimate.gradBytes = accumulators;
  return estimate;
}

/// A program's arena and its collectives' bytes, the latter `times` times.
/// A rank's programs share one arena, the largest of theirs (the runtimes
/// run one at a time; see SchedExecutor's arena_), so the estimate keeps
/// the larger of the two; stashes are added after every program.
LogicalResult addProgram(func::FuncOp f, int64_t times, RankEstimate &e,
                         bool fp8Codes) {
  auto arena =
      f ? f->getAttrOfType<IntegerAttr>("weft.arena_bytes") : IntegerAttr();
  if (!arena)
    return failure();
  e.activationBytes = std::max(e.activationBytes, arena.getInt());
  double once = 0;
  f.walk([&](Operation *op) {
    once += ringBytes(op, fp8Codes);
    if (auto send = dyn_cast<SendOp>(op))
      once += bytesOf(send.getInput());
  });
  e.commBytes += static_cast<int64_t>(once * times);
  return success();
}

/// weft-gather-per-step's program, if there is one: its gathers, once per
/// step, and the whole parameters it keeps for the step (its `.gathered`
/// state), which count as parameters: a byte an element where FP8 storage
/// holds the quantized ones as codes (fp8CodeStates).
LogicalResult addGather(func::FuncOp gather, RankEstimate &e, bool fp8Codes) {
  if (!gather)
    return success();
  if (failed(addProgram(gather, 1, e, fp8Codes)))
    return failure();
  llvm::StringMap<Type> codes;
  if (fp8Codes)
    codes = fp8CodeStates(gather->getParentOfType<ModuleOp>());
  for (ParamOp p : gather.getBody().front().getOps<ParamOp>())
    if (p.getState() && p.getName().ends_with(kGatheredSuffix))
      e.paramBytes += elementsOf(p.getType()) *
                      (codes.count(p.getName())
                           ? 1
                           : elementBytes(p.getType().getElementType()));
  return success();
}

/// The bytes of a stage forward's stash: what one micro-batch in flight
/// holds until its backward.
int64_t stashBytes(func::FuncOp forward) {
  int64_t bytes = 0;
  for (Type t : forward.getResultTypes())
    bytes += elementsOf(t) *
             elementBytes(cast<RankedTensorType>(t).getElementType());
  return bytes;
}

/// The ranks of the module's mesh (1 without one).
int64_t meshRanks(ModuleOp module) {
  int64_t ranks = 1;
  if (auto mesh = module.lookupSymbol<MeshOp>("mesh"))
    for (int64_t size : mesh.getSizes())
      ranks *= size;
  return ranks;
}

/// The ranks of a pipelined module (weft-pipeline-split's programs and
/// table): each rank's step, and its stages' forward and backward arenas
/// (the largest of them all, the last micro-batch's copies too: they share
/// one),
/// sends once per micro-batch, and the stash of the most micro-batches the
/// schedule keeps in flight on it.
FailureOr<PlacementReport>
estimatePipeline(ModuleOp module, DictionaryAttr table, bool fp8Codes) {
  PlacementReport report;
  auto ranks = table.getAs<ArrayAttr>("ranks");
  auto m = table.getAs<IntegerAttr>("microbatches");
  auto name = table.getAs<StringAttr>("schedule");
  if (!ranks || !m || !name)
    return module.emitError("malformed ") << kPipelineScheduleAttr, failure();
  PipelineEstimate pipe;
  pipe.schedule = name.str();
  pipe.ranks = static_cast<int64_t>(ranks.size());
  pipe.microbatches = m.getInt();
  // Virtual stages: the table's largest chunk + 1.
  for (Attribute entries : ranks)
    for (Attribute entry : cast<ArrayAttr>(entries))
      pipe.chunks = std::max<int64_t>(
          pipe.chunks,
          cast<IntegerAttr>(cast<ArrayAttr>(entry)[2]).getInt() + 1);
  llvm::Expected<pipeline::ScheduleKind> kind =
      pipeline::parseScheduleKind(pipe.schedule);
  if (!kind)
    return module.emitError(llvm::toString(kind.takeError())), failure();
  llvm::Expected<pipeline::ScheduleTable> built = pipeline::buildSchedule(
      *kind, pipe.ranks, pipe.microbatches, pipe.chunks);
  if (!built)
    return module.emitError(llvm::toString(built.takeError())), failure();
  llvm::Expected<pipeline::Timeline> line = pipeline::simulateSchedule(*built);
  if (!line)
    return module.emitError(llvm::toString(line.takeError())), failure();
  pipe.simulatedBubble = line->bubbleFraction;
  pipe.formulaBubble = pipeline::formulaBubbleFraction(
      *kind, pipe.ranks, pipe.microbatches, pipe.chunks);
  for (int64_t r = 0; r < pipe.ranks; ++r) {
    std::string stepName = "rank" + std::to_string(r) + ".step";
    FailureOr<RankEstimate> estimate =
        estimateStep(module.lookupSymbol<func::FuncOp>(stepName),
                     report.parameters, fp8Codes);
    if (failed(estimate))
      return module.emitError("no planned @") << stepName << " to estimate",
             failure();
    std::string gatherName = "rank" + std::to_string(r) + "." + kGatherFunc;
    if (failed(addGather(module.lookupSymbol<func::FuncOp>(gatherName),
                         *estimate, fp8Codes)))
      return module.emitError("no planned @") << gatherName << " to estimate",
             failure();
    estimate->rank = r;
    estimate->stashBytes = 0;
    for (int64_t c = 0; c < pipe.chunks; ++c) {
      int64_t s = c * pipe.ranks + r;
      for (const char *part : {".forward", ".backward", ".wgrad"}) {
        std::string program = "stage" + std::to_string(s) + part;
        auto f = module.lookupSymbol<func::FuncOp>(program);
        if (!f && StringRef(part) == ".wgrad" && !built->splitBackward)
          continue;
        // The last micro-batch's copy that reduces the stage's gradients
        // (ZeRO-0/1 with dp), if any, runs in its place once.
        auto last = module.lookupSymbol<func::FuncOp>(program + kLastSuffix);
        if (failed(addProgram(f, pipe.microbatches - (last ? 1 : 0), *estimate,
                              fp8Codes)) ||
            (last && failed(addProgram(last, 1, *estimate, fp8Codes))))
          return module.emitError("no planned @") << program << " to estimate",
                 failure();
        if (StringRef(part) == ".forward")
          estimate->stashBytes += stashBytes(f);
        else if (StringRef(part) == ".backward")
          estimate->weightStashBytes += stashBytes(f);
      }
    }
    // Stash per micro-batch in flight: an interleaved rank's count is over
    // its chunks, so the chunks' mean stash stands for one.
    estimate->inFlight = line->peakInFlight[r];
    estimate->activationBytes +=
        estimate->stashBytes * estimate->inFlight / pipe.chunks;
    if (built->splitBackward) {
      estimate->awaitingW = line->peakAwaitingW[r];
      estimate->activationBytes +=
          estimate->weightStashBytes * estimate->awaitingW;
    }
    pipe.stages.push_back(*estimate);
  }
  // Every rank of a pp coordinate (its dp × tp group, the mesh's minor
  // axes) holds the same-sized blocks.
  pipe.ranksPerStage = meshRanks(module) / pipe.ranks;
  for (int64_t g = 0; g < pipe.ranks * pipe.ranksPerStage; ++g) {
    RankEstimate estimate = pipe.stages[g / pipe.ranksPerStage];
    estimate.rank = g;
    report.ranks.push_back(estimate);
  }
  report.pipeline = std::move(pipe);
  return report;
}
} // namespace

/// The recompute policy and per-layer activation bytes of the program that
/// records them (the step, @accumulate with micro-batches, or under pp
/// each stage's backward).
void addLayerActivations(ModuleOp module, PlacementReport &report) {
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    auto bytes = f->getAttrOfType<DenseI64ArrayAttr>(kActivationBytesAttr);
    auto policy = f->getAttrOfType<StringAttr>(kRecomputeAttr);
    if (!bytes || !policy)
      continue;
    report.recompute = policy.str();
    report.layerActivationBytes.assign(bytes.asArrayRef().begin(),
                                       bytes.asArrayRef().end());
    return;
  }
}

/// The FP8 recipe weft-fp8 recorded on the programs, if any.
void addFp8(ModuleOp module, PlacementReport &report) {
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    auto recipe = f->getAttrOfType<StringAttr>(kFp8Attr);
    auto gemms = f->getAttrOfType<IntegerAttr>(kFp8GemmsAttr);
    auto bytes = f->getAttrOfType<DenseI64ArrayAttr>(kFp8BytesAttr);
    if (!recipe || !gemms || !bytes || bytes.size() != 2)
      continue;
    report.fp8 = recipe.str();
    report.fp8Gemms = gemms.getInt();
    report.fp8Bytes = bytes[0];
    report.fp8Bf16Bytes = bytes[1];
    if (auto noGain = f->getAttrOfType<ArrayAttr>(kFp8NoGainAttr)) {
      // Per weight with its layer index as `*`: one line for what every
      // layer keeps.
      auto &weights = report.fp8NoGain.emplace();
      for (auto name : noGain.getAsValueRange<StringAttr>()) {
        SmallVector<StringRef> parts;
        name.split(parts, '.');
        std::string pattern;
        for (StringRef part : parts) {
          if (!pattern.empty())
            pattern += '.';
          pattern += llvm::all_of(part, llvm::isDigit) && !part.empty()
                         ? "*"
                         : part.str();
        }
        auto found = llvm::find_if(
            weights, [&](const auto &w) { return w.first == pattern; });
        if (found == weights.end())
          weights.push_back({pattern, 1});
        else
          ++found->second;
      }
    }
    return;
  }
}

FailureOr<PlacementReport> estimatePlacement(ModuleOp module, bool fp8Codes) {
  if (auto table =
          module->getAttrOfType<DictionaryAttr>(kPipelineScheduleAttr)) {
    FailureOr<PlacementReport> report =
        estimatePipeline(module, table, fp8Codes);
    if (succeeded(report)) {
      addFp8(module, *report);
      // Each stage's backward carries the model's marks (weft-pipeline-split).
      addLayerActivations(module, *report);
    }
    return report;
  }
  PlacementReport report;
  addFp8(module, report);
  addLayerActivations(module, report);
  FailureOr<RankEstimate> estimate = estimateStep(
      module.lookupSymbol<func::FuncOp>("step"), report.parameters, fp8Codes);
  if (failed(estimate))
    return module.emitError("no planned @step to estimate"), failure();
  // Gradient accumulation (weft-accumulate-gradients): a step also runs
  // @accumulate once per micro-batch, in the arena it shares with @step,
  // and its collectives each time.
  // The last micro-batch's copy that reduces as it goes, if any, runs in
  // its place once.
  if (auto accumulate = module.lookupSymbol<func::FuncOp>(kAccumulateFunc)) {
    auto m = accumulate->getAttrOfType<IntegerAttr>(kMicrobatchesAttr);
    auto last = module.lookupSymbol<func::FuncOp>(kAccumulateLastFunc);
    if (!m ||
        failed(addProgram(accumulate, m.getInt() - (last ? 1 : 0), *estimate,
                          fp8Codes)) ||
        (last && failed(addProgram(last, 1, *estimate, fp8Codes))))
      return accumulate.emitError("no planned @accumulate to estimate"),
             failure();
  }
  if (failed(addGather(module.lookupSymbol<func::FuncOp>(kGatherFunc),
                       *estimate, fp8Codes)))
    return module.emitError("no planned @") << kGatherFunc << " to estimate",
           failure();
  // The evaluation forward shares the arena too (weft-run's samples and
  // evaluations run it between steps); its collectives are not the step's.
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward");
      forward && failed(addProgram(forward, /*times=*/0, *estimate, fp8Codes)))
    return forward.emitError("no planned @forward to estimate"), failure();
  // Every rank runs the same program on same-sized blocks.
  for (int64_t r = 0, ranks = meshRanks(module); r < ranks; ++r) {
    estimate->rank = r;
    report.ranks.push_back(*estimate);
  }
  return report;
}

int64_t PlacementReport::fp8NoGainGemms() const {
  int64_t gemms = 0;
  if (fp8NoGain)
    for (const auto &w : *fp8NoGain)
      gemms += w.second;
  return gemms;
}

llvm::json::Object PlacementReport::toJSON() const {
  llvm::json::Array list;
  for (const RankEstimate &r : ranks)
    list.push_back(llvm::json::Object{{"rank", r.rank},
                                      {"param_bytes", r.paramBytes},
                                      {"grad_bytes", r.gradBytes},
                                      {"optimizer_bytes", r.optimizerBytes},
                                      {"activation_bytes", r.activationBytes},
                                      {"comm_bytes", r.commBytes}});
  llvm::json::Object out{{"parameters", parameters},
                         {"ranks", std::move(list)}};
  if (!recompute.empty()) {
    out["recompute"] = recompute;
    out["layer_activation_bytes"] =
        llvm::json::Array(llvm::ArrayRef<int64_t>(layerActivationBytes));
  }
  if (!fp8.empty()) {
    llvm::json::Object f{{"recipe", fp8},
                         {"gemms", fp8Gemms},
                         {"fp8_bytes", fp8Bytes},
                         {"bf16_bytes", fp8Bf16Bytes}};
    if (fp8NoGain) {
      llvm::json::Array weights;
      for (const auto &[pattern, n] : *fp8NoGain)
        weights.push_back(
            llvm::json::Object{{"weight", pattern}, {"gemms", n}});
      f["no_gain"] = fp8NoGainGemms();
      f["no_gain_weights"] = std::move(weights);
    }
    out["fp8"] = std::move(f);
  }
  if (pipeline) {
    llvm::json::Array perRank;
    for (const RankEstimate &r : pipeline->stages)
      perRank.push_back(
          llvm::json::Object{{"rank", r.rank},
                             {"stash_bytes", r.stashBytes},
                             {"in_flight", r.inFlight},
                             {"weight_stash_bytes", r.weightStashBytes},
                             {"awaiting_w", r.awaitingW}});
    out["pipeline"] =
        llvm::json::Object{{"schedule", pipeline->schedule},
                           {"ranks", pipeline->ranks},
                           {"microbatches", pipeline->microbatches},
                           {"virtual", pipeline->chunks},
                           {"bubble_formula", pipeline->formulaBubble},
                           {"bubble_simulated", pipeline->simulatedBubble},
                           {"stages", std::move(perRank)}};
  }
  return out;
}

std::string PlacementReport::table() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%-6s %12s %12s %12s %12s %12s %12s\n", "rank", "params",
                     "grads", "optimizer", "activations", "total", "comm/step");
  for (const RankEstimate &r : ranks) {
    int64_t total = r.totalBytes();
    os << llvm::format("%-6lld %12s %12s %12s %12s %12s %12s\n",
                       static_cast<long long>(r.rank),
                       mib(r.paramBytes).c_str(), mib(r.gradBytes).c_str(),
                       mib(r.optimizerBytes).c_str(),
                       mib(r.activationBytes).c_str(), mib(total).c_str(),
                       mib(r.commBytes).c_str());
  }
  if (!recompute.empty()) {
    // One size when every layer stores the same, as in a uniform model.
    os << "stored for the backward (recompute=" << recompute << "), per layer:";
    bool uniform = llvm::all_equal(layerActivationBytes);
    if (uniform && !layerActivationBytes.empty())
      os << " " << mib(layerActivationBytes.front()) << " x "
         << layerActivationBytes.size() << " layers";
    else
      for (int64_t bytes : layerActivationBytes)
        os << " " << mib(bytes);
    // Under pp a rank stashes its own layers' once per micro-batch in
    // flight (the lines below).
    os << (pipeline ? " (per micro-batch: each pp rank stashes its own "
                      "layers' for each in flight, below)\n"
                    : " (in activations above)\n");
  }
  if (!fp8.empty())
    os << "fp8 (" << fp8 << "): " << fp8Gemms << " GEMMs read " << mib(fp8Bytes)
       << " of FP8 operands and scales a step, " << mib(fp8Bf16Bytes)
       << " in bf16 (x, w and output gradient, whole model)\n";
  if (!fp8.empty() && fp8NoGain) {
    int64_t gemms = fp8NoGainGemms();
    if (gemms == 0)
      os << "fp8: no GEMM stays out of FP8 for being too small to gain";
    else
      os << "fp8: " << gemms
         << " more GEMMs stay out of FP8, too small to gain";
    os << " on the topology's device at one rank's shapes (--fp8-min-dim "
          "auto)";
    llvm::ListSeparator comma(", ");
    os << (fp8NoGain->empty() ? "" : ": ");
    for (const auto &[pattern, n] : *fp8NoGain)
      os << comma << pattern << " x" << n;
    os << "\n";
  }
  if (pipeline) {
    os << llvm::format("pipeline: %s, pp=%lld, %lld micro-batches",
                       pipeline->schedule.c_str(),
                       static_cast<long long>(pipeline->ranks),
                       static_cast<long long>(pipeline->microbatches));
    if (pipeline->chunks > 1)
      os << llvm::format(", %lld virtual stages per rank",
                         static_cast<long long>(pipeline->chunks));
    os << llvm::format(": bubble %.3f simulated (uniform stages), %.3f by "
                       "the formula\n",
                       pipeline->simulatedBubble, pipeline->formulaBubble);
    for (const RankEstimate &r : pipeline->stages) {
      int64_t n = pipeline->ranksPerStage;
      if (n > 1)
        os << llvm::format("  pp rank %lld (ranks %lld-%lld)",
                           static_cast<long long>(r.rank),
                           static_cast<long long>(r.rank * n),
                           static_cast<long long>(r.rank * n + n - 1));
      else
        os << llvm::format("  rank %lld", static_cast<long long>(r.rank));
      os << llvm::format(
          ": %lld micro-batch(es) in flight, %s stashed each",
          static_cast<long long>(r.inFlight),
          mib(r.stashBytes / std::max<int64_t>(pipeline->chunks, 1)).c_str());
      if (r.awaitingW > 0)
        os << llvm::format("; %lld awaiting W, %s each",
                           static_cast<long long>(r.awaitingW),
                           mib(r.weightStashBytes).c_str());
      os << " (in activations above)\n";
    }
  }
  return out;
}

std::string overMemory(const RankEstimate &r, const Topology &topology) {
  int64_t reserve = topology.device.runtimeReserveBytes;
  int64_t total = r.totalBytes() + reserve;
  if (topology.device.memoryBytes <= 0 || total <= topology.device.memoryBytes)
    return "";
  std::vector<std::pair<int64_t, const char *>> items = {
      {r.activationBytes, "activations"},
      {r.optimizerBytes, "optimizer state"},
      {r.paramBytes, "parameters"},
      {r.gradBytes, "gradients"},
      {reserve, "runtime reserve"}};
  std::stable_sort(
      items.begin(), items.end(),
      [](const auto &a, const auto &b) { return a.first > b.first; });
  auto gib = [](int64_t bytes) {
    return llvm::formatv("{0:f2} GiB", bytes / double(int64_t(1) << 30)).str();
  };
  std::string out =
      llvm::formatv("rank {0} needs {1}, more than the {2} of a {3} device",
                    r.rank, gib(total), gib(topology.device.memoryBytes),
                    topology.name)
          .str();
  const char *sep = ": ";
  for (const auto &[bytes, what] : items)
    if (bytes > 0) {
      out += sep + std::string(what) + " " + gib(bytes);
      sep = ", ";
    }
  return out;
}

} // namespace weft

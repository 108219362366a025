//===- Report.cpp - per-rank memory and communication estimate ------------===//

#include "passes/costmodel/Report.h"

#include "passes/costmodel/CostModel.h"
#include "passes/pipeline/Names.h"

#include "dialects/weft/IR/WeftOps.h"
#include "passes/memory/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
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

/// Bytes one rank sends for `op` on a ring of its group (CostModel.h's
/// rule, as the sched program's collectives are costed).
double ringBytes(Operation *op) {
  using Kind = sched::CollectiveKind;
  if (auto r = dyn_cast<AllReduceOp>(op)) {
    double bytes = 0;
    for (Value v : r.getInputs())
      bytes += bytesOf(v);
    return collectiveSendBytes(Kind::all_reduce, bytes, bytes, r.groupSize());
  }
  if (auto g = dyn_cast<AllGatherOp>(op))
    return collectiveSendBytes(Kind::all_gather, bytesOf(g.getInput()),
                               bytesOf(g.getResult()), g.groupSize());
  if (auto s = dyn_cast<ReduceScatterOp>(op))
    return collectiveSendBytes(Kind::reduce_scatter, bytesOf(s.getInput()),
                               bytesOf(s.getResult()), s.groupSize());
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

FailureOr<PlacementReport> estimatePlacement(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>("step");
  if (!step || !step->hasAttr("weft.arena_bytes"))
    return module.emitError("no planned @step to estimate"), failure();
  PlacementReport report;
  RankEstimate estimate;
  llvm::StringMap<ParamOp> byName;
  for (ParamOp p : step.getBody().front().getOps<ParamOp>())
    byName[p.getName()] = p;
  for (ParamOp p : step.getBody().front().getOps<ParamOp>()) {
    if (p.getState())
      continue;
    int64_t local = elementsOf(p.getType());
    report.parameters += local * splitOf(p);
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
  step.walk([&](Operation *op) { comm += ringBytes(op); });
  // Gradient accumulation (weft-accumulate-gradients): a step also runs
  // @accumulate once per micro-batch, whose arena is resident beside
  // @step's (each program has its own) and whose collectives run each
  // time; the gradients persist in their accumulators, which replace the
  // gradient count above (@step's gradients are their means, in its arena).
  if (auto accumulate = module.lookupSymbol<func::FuncOp>(kAccumulateFunc)) {
    auto arena = accumulate->getAttrOfType<IntegerAttr>("weft.arena_bytes");
    auto m = accumulate->getAttrOfType<IntegerAttr>(kMicrobatchesAttr);
    if (!arena || !m)
      return accumulate.emitError("no planned @accumulate to estimate"),
             failure();
    estimate.activationBytes += arena.getInt();
    double once = 0;
    accumulate.walk([&](Operation *op) { once += ringBytes(op); });
    comm += once * m.getInt();
    estimate.gradBytes = 0;
    for (ParamOp p : step.getBody().front().getOps<ParamOp>())
      if (p.getName().ends_with(kGradAccumulatorSuffix))
        estimate.gradBytes += elementsOf(p.getType()) *
                              elementBytes(p.getType().getElementType());
  }
  estimate.commBytes = static_cast<int64_t>(comm);
  // Every rank runs the same program on same-sized blocks.
  int64_t ranks = 1;
  if (auto mesh = module.lookupSymbol<MeshOp>("mesh"))
    for (int64_t size : mesh.getSizes())
      ranks *= size;
  for (int64_t r = 0; r < ranks; ++r) {
    estimate.rank = r;
    report.ranks.push_back(estimate);
  }
  return report;
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
  return llvm::json::Object{{"parameters", parameters},
                            {"ranks", std::move(list)}};
}

std::string PlacementReport::table() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%-6s %12s %12s %12s %12s %12s %12s\n", "rank", "params",
                     "grads", "optimizer", "activations", "total", "comm/step");
  for (const RankEstimate &r : ranks) {
    int64_t total =
        r.paramBytes + r.gradBytes + r.optimizerBytes + r.activationBytes;
    os << llvm::format("%-6lld %12s %12s %12s %12s %12s %12s\n",
                       static_cast<long long>(r.rank),
                       mib(r.paramBytes).c_str(), mib(r.gradBytes).c_str(),
                       mib(r.optimizerBytes).c_str(),
                       mib(r.activationBytes).c_str(), mib(total).c_str(),
                       mib(r.commBytes).c_str());
  }
  return out;
}

} // namespace weft

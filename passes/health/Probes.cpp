//===- Probes.cpp - per-layer health measurements -------------------------===//
//
// The quantities that predict a divergence (activation growth, attention
// collapsing onto a few keys or spreading evenly, a router favouring a
// few experts) computed in the training step itself, so they cost a few
// reductions (the attention's entropy inside its own kernel) instead of a
// second pass over the data. Each lands in a transient state parameter the
// runtime reads, logs and zeroes after the step; under gradient
// accumulation the micro-batches fold into it (sum or maximum).
//
//===----------------------------------------------------------------------===//

#include "passes/health/Passes.h"

#include "passes/recompute/Layers.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

namespace weft {
#define GEN_PASS_DEF_PROBES
#include "passes/health/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

llvm::Expected<ProbeChoice> weft::parseProbes(StringRef text) {
  ProbeChoice choice;
  SmallVector<StringRef> words;
  text.split(words, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef word : words) {
    word = word.trim();
    if (word == "all") {
      choice = {true, true, true, true};
      continue;
    }
    bool *flag = llvm::StringSwitch<bool *>(word)
                     .Case("activations", &choice.activations)
                     .Case("attention", &choice.attention)
                     .Case("router", &choice.router)
                     .Case("gradients", &choice.gradients)
                     .Default(nullptr);
    if (!flag)
      return llvm::createStringError(
          "unknown probe '" + word +
          "' (known: activations, attention, router, gradients, all)");
    *flag = true;
  }
  return choice;
}

ParamOp weft::declareProbe(func::FuncOp func, StringRef metric,
                           RankedTensorType type, StringRef fold) {
  std::string name = "probe." + metric.str();
  std::replace(name.begin(), name.end(), '/', '.');
  Block &body = func.getBody().front();
  // After the probes declared so far: the bundle, and so the metrics,
  // list them in the order they were made.
  ParamOp last;
  for (ParamOp p : body.getOps<ParamOp>()) {
    if (p.getName() == name)
      return p;
    if (p->hasAttr(kProbeAttr))
      last = p;
  }
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  if (last)
    b.setInsertionPointAfter(last);
  auto p = ParamOp::create(b, func.getLoc(), type, b.getStringAttr(name),
                           InitKindAttr::get(b.getContext(), InitKind::Zeros),
                           FloatAttr(), b.getUnitAttr());
  p->setAttr(kTransientAttr, b.getUnitAttr());
  p->setAttr(kProbeAttr, b.getStringAttr(metric));
  p->setAttr(kProbeFoldAttr, b.getStringAttr(fold));
  return p;
}

namespace {
struct ProbesPass : weft::impl::ProbesBase<ProbesPass> {
  using ProbesBase::ProbesBase;

  void runOnOperation() override {
    llvm::Expected<ProbeChoice> choice = parseProbes(probes);
    if (!choice) {
      getOperation().emitError("weft-probes: ")
          << llvm::toString(choice.takeError());
      return signalPassFailure();
    }
    forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward) {
      getOperation().emitError("weft-probes: no function named @") << func;
      return signalPassFailure();
    }
    if (!choice->activations && !choice->attention && !choice->router)
      return;
    llvm::DenseSet<Operation *> ops = forwardOps(forward);
    llvm::DenseMap<Operation *, int64_t> layer = layersOf(forward, ops);
    auto layerOf = [&](Operation *op) {
      auto it = layer.find(op);
      return it == layer.end() ? kPrologue : it->second;
    };
    if (choice->activations) {
      llvm::MapVector<int64_t, Value> outputs = layerOutputs(forward);
      if (outputs.empty()) {
        forward.emitError("weft-probes: @")
            << func << " has no layers to probe (no weft.param with "
            << kLayerAttr << " is read on the way to the loss)";
        return signalPassFailure();
      }
      for (auto [l, x] : outputs)
        probeActivation(l, x);
    }
    // Collected first: the probes add attention ops of their own.
    SmallVector<std::pair<int64_t, AttentionOp>> attentions;
    SmallVector<std::pair<int64_t, TopKGatingOp>> routers;
    for (Operation &op : forward.getBody().front()) {
      if (!ops.contains(&op) || !inLayers(layerOf(&op)))
        continue;
      if (auto att = dyn_cast<AttentionOp>(op))
        attentions.push_back({layerOf(&op), att});
      if (auto gate = dyn_cast<TopKGatingOp>(op))
        routers.push_back({layerOf(&op), gate});
    }
    if (choice->attention)
      for (auto [l, att] : attentions)
        probeAttention(metricName(l, "attn_entropy"), att, l);
    if (choice->router)
      for (auto [l, gate] : routers) {
        std::string load = metricName(l, "router_load");
        probeRouter(load, metricName(l, "router_imbalance"), gate, l);
      }
  }

private:
  func::FuncOp forward;
  llvm::StringMap<int> used;

  /// "<layer>/<stat>", with ".1", ".2" after the first when a layer has
  /// several (two attentions in one layer).
  std::string metricName(int64_t l, StringRef stat) {
    std::string base = layerName(forward, l) + "/" + stat.str();
    int n = used[base]++;
    return n == 0 ? base : base + "." + std::to_string(n);
  }

  /// Adds `value` (f32, of the probe's type) into probe `metric`'s
  /// parameter, or takes the maximum (fold "max"). The parameter takes the
  /// probed layer's weft.layer, so a pipeline keeps it on that layer's
  /// stage.
  void fold(OpBuilder &b, Location loc, StringRef metric, StringRef how,
            Value value, int64_t layer) {
    auto type = cast<RankedTensorType>(value.getType());
    ParamOp p = declareProbe(forward, metric, type, how);
    p->setAttr(kLayerAttr, b.getI64IntegerAttr(layer));
    Value next = how == "max"
                     ? MaxOp::create(b, loc, p.getResult(), value).getResult()
                     : AddOp::create(b, loc, p.getResult(), value).getResult();
    AssignOp::create(b, loc, p.getNameAttr(), next);
  }

  /// The mean of every element of `x` (f32) as a scalar (partitioning
  /// combines the ranks' means).
  static Value mean(weft::detail::Emitter &e, Value x) {
    return e.reduceMean(x, e.allDims(x));
  }

  void probeActivation(int64_t l, Value x) {
    std::string layer = layerName(forward, l);
    OpBuilder b(forward.getContext());
    b.setInsertionPointAfterValue(x);
    weft::detail::Emitter e{b, x.getLoc()};
    Value x32 = e.f32(x);
    fold(b, e.loc, layer + "/act_rms", "rms",
         mean(e, SquareOp::create(b, e.loc, x32)), l);
    // weft.fp8_amax over one block: the largest magnitude, max-reduced
    // across the ranks that split it (NaN as +inf, which the max keeps).
    RankedTensorType type = e.typeOf(x32);
    auto ones = RankedTensorType::get(SmallVector<int64_t>(type.getRank(), 1),
                                      b.getF32Type());
    Value amax = Fp8AmaxOp::create(b, e.loc, ones, x32);
    fold(b, e.loc, layer + "/act_max_abs", "max",
         e.reshape(amax, RankedTensorType::get({}, b.getF32Type())), l);
  }

  void probeAttention(const std::string &metric, AttentionOp att, int64_t l) {
    OpBuilder b(att);
    b.setInsertionPointAfter(att);
    weft::detail::Emitter e{b, att.getLoc()};
    // The entropy of the same query, key and mask given the attention's own
    // lse: the lowering computes it in that attention's pass.
    Value entropy = AttentionEntropyOp::create(
        b, e.loc, att.getQuery(), att.getKey(), att.getLse(),
        att.getQueryPositions(), att.getKeyPositions(), att.getScaleAttr(),
        att.getCausalAttr());
    fold(b, e.loc, metric, "mean", mean(e, entropy), l);
  }

  void probeRouter(const std::string &loadMetric,
                   const std::string &imbalanceMetric, TopKGatingOp gate,
                   int64_t l) {
    OpBuilder b(gate);
    b.setInsertionPointAfter(gate);
    weft::detail::Emitter e{b, gate.getLoc()};
    Value indices = gate.getIndices(); // [T, k]
    RankedTensorType logits = e.typeOf(gate.getLogits());
    int64_t experts = logits.getDimSize(1);
    RankedTensorType choices = e.typeOf(indices);
    auto f32 = b.getF32Type();
    Value hot = OneHotOp::create(
        b, e.loc,
        RankedTensorType::get(
            {choices.getDimSize(0), choices.getDimSize(1), experts}, f32),
        indices);
    // The share of all T k choices each expert got (sums to 1).
    auto perExpert = RankedTensorType::get({experts}, f32);
    Value load =
        e.mul(e.reduceSum(hot, {0, 1}),
              e.splat(perExpert, 1.0 / double(choices.getNumElements())));
    fold(b, e.loc, loadMetric, "mean", load, l);
    // The step's load, not each micro-batch's: the same loads summed, the
    // runtime takes the largest over their mean (E times the largest share).
    fold(b, e.loc, imbalanceMetric, "max_over_mean", load, l);
  }
};
} // namespace

//===- AssignStages.cpp - cut a model into pipeline stages ----------------===//
//
// Stages are contiguous runs of transformer layers (the `weft.layer` the
// frontends put on parameters). Every op then runs on the latest stage any
// of its operands comes from, so the residual stream moves forward only;
// parameters outside the layers go to the first stage when the model reads
// them before its first layer (embeddings) and to the last otherwise (the
// final norm, the head). A tied embedding read again by the head stays on
// the first stage, and the head's stage receives it.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "passes/pipeline/Names.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <limits>

namespace weft {
#define GEN_PASS_DEF_ASSIGNSTAGES
#include "passes/pipeline/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
int64_t elementsOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

/// What an op costs for balancing stages: the matrix FLOPs of GEMMs and
/// attention, else the elements it writes (memory-bound work, in the same
/// unit as one FLOP per element).
double opCost(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = lhs.getShape()[mm.getTransposeLhs() ? lhs.getRank() - 2
                                                    : lhs.getRank() - 1];
    return 2.0 * elementsOf(mm.getResult().getType()) * k;
  }
  if (auto att = dyn_cast<AttentionOp>(op)) {
    // q: [B, S, H, D], k: [B, T, Hkv, D]: QK^T and PV.
    auto q = cast<RankedTensorType>(att.getQuery().getType());
    auto k = cast<RankedTensorType>(att.getKey().getType());
    return 4.0 * elementsOf(q) * k.getShape()[1];
  }
  double written = 0;
  for (Type t : op->getResultTypes())
    written += elementsOf(t);
  return written;
}
} // namespace

llvm::Expected<std::vector<std::pair<int64_t, int64_t>>>
weft::parseStageBoundaries(llvm::StringRef spec, int64_t layers,
                           int64_t stages) {
  auto fail = [](const Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  std::vector<std::pair<int64_t, int64_t>> ranges;
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  int64_t next = 0;
  for (StringRef part : parts) {
    auto [lo, hi] = part.trim().split('-');
    int64_t first = 0, last = 0;
    if (lo.getAsInteger(10, first) ||
        (hi.empty() ? (last = first, false) : hi.getAsInteger(10, last)) ||
        first < 0 || last < first)
      return fail("stages: '" + part +
                  "' is not a range of layers like 0-7 (or one layer)");
    if (first < next)
      return fail("stages: " + part + " overlaps the stage before it");
    if (first > next)
      return fail("stages: layers " + Twine(next) + "-" + Twine(first - 1) +
                  " are in no stage");
    if (last >= layers)
      return fail("stages: " + part + " goes past the model's last layer " +
                  Twine(layers - 1));
    ranges.push_back({first, last});
    next = last + 1;
  }
  if (next != layers)
    return fail("stages: layers " + Twine(next) + "-" + Twine(layers - 1) +
                " are in no stage");
  if (static_cast<int64_t>(ranges.size()) != stages)
    return fail("stages: " + Twine(ranges.size()) + " ranges for " +
                Twine(stages) + " pipeline stages");
  return ranges;
}

std::vector<std::pair<int64_t, int64_t>>
weft::balanceStages(llvm::ArrayRef<double> layerCosts, double before,
                    double after, int64_t stages,
                    llvm::ArrayRef<double> stageScales) {
  // best[k][i]: the least largest stage of the first i layers in k stages.
  int64_t n = static_cast<int64_t>(layerCosts.size());
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + layerCosts[i];
  assert((stageScales.empty() ||
          static_cast<int64_t>(stageScales.size()) == stages) &&
         "one scale per stage");
  // Layers [from, to) as stage k (from 1).
  auto cost = [&](int64_t from, int64_t to, int64_t k) {
    double scale = stageScales.empty() ? 1.0 : stageScales[k - 1];
    return scale * (prefix[to] - prefix[from]) + (from == 0 ? before : 0) +
           (to == n ? after : 0);
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int64_t>> cut(stages + 1,
                                        std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k)
    for (int64_t i = k; i <= n; ++i)
      for (int64_t j = k - 1; j < i; ++j) {
        double v = std::max(best[k - 1][j], cost(j, i, k));
        // Ties go to the later cut: earlier stages get fewer layers, as
        // they hold more micro-batches' activations in flight.
        if (v <= best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
  std::vector<std::pair<int64_t, int64_t>> ranges(stages);
  for (int64_t k = stages, i = n; k > 0; i = cut[k][i], --k)
    ranges[k - 1] = {cut[k][i], i - 1};
  return ranges;
}

FailureOr<int64_t> weft::countLayers(Block &body, StringRef pass) {
  int64_t layers = 0;
  for (ParamOp p : body.getOps<ParamOp>())
    if (auto layer = p->getAttrOfType<IntegerAttr>(kLayerAttr)) {
      if (layer.getInt() < 0)
        return p.emitError(pass) << ": parameter '" << p.getName()
                                 << "' has a negative weft.layer";
      layers = std::max(layers, layer.getInt() + 1);
    }
  return layers;
}

llvm::DenseMap<Value, int64_t> weft::valueLayers(Block &body) {
  llvm::DenseMap<Value, int64_t> layerOf;
  for (Operation &op : body.without_terminator()) {
    int64_t layer = -1;
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr))
        layer = l.getInt();
    } else {
      for (Value v : op.getOperands())
        if (auto it = layerOf.find(v); it != layerOf.end())
          layer = std::max(layer, it->second);
    }
    if (layer >= 0)
      for (Value r : op.getResults())
        layerOf[r] = layer;
  }
  return layerOf;
}

LogicalResult weft::assignStages(func::FuncOp forward, int64_t stages,
                                 llvm::StringRef boundaries) {
  auto fail = [&](const Twine &message) {
    return forward.emitError("weft-pipeline-assign-stages: ") << message;
  };
  if (stages < 1)
    return fail("stages must be at least 1, got " + Twine(stages));
  Block &body = forward.getBody().front();
  FailureOr<int64_t> counted = countLayers(body, "weft-pipeline-assign-stages");
  if (failed(counted))
    return failure();
  int64_t layers = *counted;
  if (layers == 0)
    return fail("no parameter of @" + forward.getSymName() +
                " carries weft.layer; pipeline stages are cut between "
                "layers");
  if (layers < stages)
    return fail("@" + forward.getSymName() + " has " + Twine(layers) +
                " layers, fewer than the " + Twine(stages) +
                " pipeline stages");

  // Each op's layer (none: before or after the layers, by position).
  llvm::DenseMap<Value, int64_t> layerOf = valueLayers(body);
  SmallVector<Operation *> ops;
  int64_t firstLayered = -1;
  for (Operation &op : body.without_terminator()) {
    if (firstLayered < 0 && !isa<ParamOp>(op) && op.getNumResults() &&
        layerOf.count(op.getResult(0)))
      firstLayered = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
  }
  std::vector<double> layerCosts(layers, 0);
  double before = 0, after = 0;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (isa<ParamOp>(op))
      continue;
    int64_t layer = op->getNumResults()
                        ? layerOf.lookup_or(op->getResult(0), int64_t(-1))
                        : -1;
    double c = opCost(op);
    if (layer >= 0)
      layerCosts[layer] += c;
    else if (static_cast<int64_t>(i) < firstLayered)
      before += c;
    else
      after += c;
  }
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (boundaries.empty()) {
    ranges = balanceStages(layerCosts, before, after, stages);
  } else {
    auto parsed = parseStageBoundaries(boundaries, layers, stages);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    ranges = std::move(*parsed);
  }
  std::vector<int64_t> stageOfLayer(layers);
  for (auto [s, range] : llvm::enumerate(ranges))
    for (int64_t l = range.first; l <= range.second; ++l)
      stageOfLayer[l] = static_cast<int64_t>(s);

  // Stages: parameters by layer or position, ops the latest of their
  // operands'. Ops that read no stage's value stay unassigned.
  Builder b(forward.getContext());
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = static_cast<int64_t>(i);
  llvm::DenseMap<Value, int64_t> stageOf; // Stage + 1; 0: none.
  for (Operation *op : ops) {
    int64_t stage = -1;
    if (auto p = dyn_cast<ParamOp>(op)) {
      // Dropout's step counter belongs to no stage: every program that
      // drops copies it in, and every rank's step counts its own copy on,
      // so each stage draws the step's mask.
      if (p.getName() == kDropoutStepParam)
        continue;
      if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr)) {
        stage = stageOfLayer[l.getInt()];
      } else {
        int64_t first = std::numeric_limits<int64_t>::max();
        for (Operation *user : p->getUsers())
          first = std::min(first, position.lookup(user));
        stage = first < firstLayered ? 0 : stages - 1;
      }
    } else {
      for (Value v : op->getOperands())
        stage = std::max(stage, stageOf.lookup(v) - 1);
    }
    if (stage < 0)
      continue;
    op->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
    for (Value r : op->getResults())
      stageOf[r] = stage + 1;
  }
  forward->setAttr(kStagesAttr, b.getI64IntegerAttr(stages));
  return success();
}

namespace {
struct AssignStagesPass : weft::impl::AssignStagesBase<AssignStagesPass> {
  using AssignStagesBase::AssignStagesBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward) {
      getOperation().emitError("weft-pipeline-assign-stages: no function "
                               "named @")
          << func;
      return signalPassFailure();
    }
    if (failed(assignStages(forward, stages, boundaries)))
      signalPassFailure();
  }
};
} // namespace

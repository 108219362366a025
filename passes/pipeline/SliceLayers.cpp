//===- SliceLayers.cpp - a model cut to its first layers
//-------------------===//
//
// The planner (passes/planner/Planner.h) times a layer as the difference of
// the model with two layers and with one. The frontends build those from a
// config; a model read from .mlir is cut here, so the planner can plan any
// graph whose parameters carry `weft.layer`.
//
// Layers are found as weft-pipeline-assign-stages finds them (valueLayers:
// a value belongs to the latest layer it is computed from), and a layer's
// output by liveness in program order: between two layers, the residual
// stream is the one value computed from the inputs or the layers that is
// live. Cutting to k
// layers makes the ops that read layer L-1's output read layer k-1's, and
// drops what no longer feeds the function's results.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "passes/pipeline/Names.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace weft {
#define GEN_PASS_DEF_SLICELAYERS
#include "passes/pipeline/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// Where each op of a block is, and where each value of the stream is last
/// read (the terminator reads at the block's end). The stream: what is
/// computed from the layers' parameters or from the function's inputs (the
/// embeddings' output is the stream before the first layer); not the
/// parameters, nor what is computed from constants alone (positions,
/// rotary tables), which every layer may read.
struct Positions {
  explicit Positions(Block &body,
                     const llvm::DenseMap<Value, int64_t> &layerOf) {
    llvm::DenseSet<Value> fromInputs;
    for (Operation &op : body) {
      int64_t here = static_cast<int64_t>(ops.size());
      position[&op] = here;
      ops.push_back(&op);
      bool input = false;
      for (Value operand : op.getOperands()) {
        input |= isa<BlockArgument>(operand) || fromInputs.count(operand);
        if (!isa<BlockArgument>(operand) && !isa<ParamOp>(op) &&
            !isa<ParamOp>(operand.getDefiningOp()) &&
            (layerOf.count(operand) || fromInputs.count(operand)))
          lastRead[operand] = std::max(lastRead.lookup(operand), here);
      }
      if (input)
        fromInputs.insert(op.getResults().begin(), op.getResults().end());
    }
  }
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseMap<Value, int64_t> lastRead;
};
} // namespace

/// Layer `layer`'s output: after the last op that reads one of its
/// parameters, the first point at which exactly one value of the stream is
/// live and that value is the layer's; null if there is none.
static Value layerOutput(int64_t layer, const Positions &at,
                         const llvm::DenseMap<Value, int64_t> &layerOf) {
  int64_t start = -1;
  for (auto [i, op] : llvm::enumerate(at.ops))
    for (Value operand : op->getOperands())
      if (auto p = operand.getDefiningOp<ParamOp>())
        if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr);
            l && l.getInt() == layer)
          start = static_cast<int64_t>(i);
  if (start < 0)
    return nullptr;
  // The live set after op `start`, then kept as the sweep moves on.
  llvm::SetVector<Value> live;
  for (auto [value, last] : at.lastRead)
    if (at.position.lookup(value.getDefiningOp()) <= start && last > start)
      live.insert(value);
  for (int64_t p = start;; ++p) {
    if (live.size() == 1 && layerOf.lookup(live.front()) == layer)
      return live.front();
    if (p + 1 >= static_cast<int64_t>(at.ops.size()))
      return nullptr;
    Operation *next = at.ops[p + 1];
    for (Value r : next->getResults())
      if (at.lastRead.lookup(r) > p + 1)
        live.insert(r);
    live.remove_if([&](Value v) { return at.lastRead.lookup(v) <= p + 1; });
  }
}

LogicalResult weft::sliceLayers(func::FuncOp forward, int64_t keep) {
  auto fail = [&](const Twine &message) {
    return forward.emitError("weft-slice-layers: ") << message;
  };
  if (forward.isExternal())
    return fail("@" + forward.getSymName() + " has no body to cut");
  Block &body = forward.getBody().front();
  FailureOr<int64_t> counted = countLayers(body, "weft-slice-layers");
  if (failed(counted))
    return failure();
  int64_t layers = *counted;
  if (layers == 0)
    return fail("no parameter of @" + forward.getSymName() +
                " carries weft.layer; a model is cut between layers");
  if (keep < 1 || keep > layers)
    return fail("cannot keep " + Twine(keep) + " layers of @" +
                forward.getSymName() + "'s " + Twine(layers) +
                " (from 1 to all of them)");
  if (keep == layers)
    return success();

  llvm::DenseMap<Value, int64_t> layerOf = valueLayers(body);
  Positions at(body, layerOf);
  auto outputOf = [&](int64_t layer) -> FailureOr<Value> {
    if (Value v = layerOutput(layer, at, layerOf))
      return v;
    return fail("layer " + Twine(layer) +
                " has no single output: after the last op reading its "
                "parameters, no point has exactly one value computed from "
                "the inputs or the layers live (a second stream, or a "
                "value passed across layers, cannot be cut)");
  };
  FailureOr<Value> cut = outputOf(keep - 1), last = outputOf(layers - 1);
  if (failed(cut) || failed(last))
    return failure();
  if (cut->getType() != last->getType())
    return fail("layer " + Twine(keep - 1) + "'s output is " +
                llvm::formatv("{0}", cut->getType()).str() + " but layer " +
                Twine(layers - 1) + "'s is " +
                llvm::formatv("{0}", last->getType()).str() +
                "; what follows the layers cannot read the one for the "
                "other");
  last->replaceAllUsesWith(*cut);
  // Drop what fed only the later layers: the ops after the cut that no
  // longer feed the results, and the later layers' parameters wherever the
  // model declares them.
  int64_t from = at.position.lookup(cut->getDefiningOp());
  for (Operation *op : llvm::reverse(at.ops)) {
    if (op->hasTrait<OpTrait::IsTerminator>() || !op->use_empty())
      continue;
    auto param = dyn_cast<ParamOp>(op);
    auto layer =
        param ? param->getAttrOfType<IntegerAttr>(kLayerAttr) : IntegerAttr();
    if (at.position.lookup(op) > from || (layer && layer.getInt() >= keep))
      op->erase();
  }
  return success();
}

namespace {
struct SliceLayersPass : weft::impl::SliceLayersBase<SliceLayersPass> {
  using SliceLayersBase::SliceLayersBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward) {
      getOperation().emitError("weft-slice-layers: no function named @")
          << func;
      return signalPassFailure();
    }
    if (failed(sliceLayers(forward, layers)))
      signalPassFailure();
  }
};
} // namespace

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
/// Where each op of a block is, where each value of the stream is last
/// read (the terminator reads at the block's end), and how far it goes.
/// The stream: what is computed from the layers' parameters or from the
/// function's inputs (the embeddings' output is the stream before the
/// first layer); not the parameters, nor what is computed from constants
/// alone (positions, rotary tables), which every layer may read.
struct Positions {
  Positions(Block &body, const llvm::DenseMap<Value, int64_t> &layerOf,
            int64_t layers) {
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
    // Backwards: the latest layer whose parameters each value is read
    // with, directly or through what it feeds (a parameter outside the
    // layers, as the final norm's or the head's, counts as after them).
    for (Operation *op : llvm::reverse(ops)) {
      int64_t reach = -1;
      for (Value r : op->getResults())
        reach = std::max(reach, reaches.lookup_or(r, int64_t(-1)));
      for (Value operand : op->getOperands())
        if (auto p = operand.getDefiningOp<ParamOp>()) {
          auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr);
          reach = std::max(reach, l ? l.getInt() : layers);
        }
      opReach[op] = reach;
      for (Value operand : op->getOperands())
        if (lastRead.count(operand))
          reaches[operand] =
              std::max(reaches.lookup_or(operand, int64_t(-1)), reach);
    }
  }
  /// Whether `v`, read after op `p`, reaches a parameter of a layer after
  /// `layer` (or of none).
  bool goesOn(Value v, int64_t p, int64_t layer) const {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      return position.lookup(user) > p && opReach.lookup(user) > layer;
    });
  }
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position, opReach;
  llvm::DenseMap<Value, int64_t> lastRead, reaches;
};
} // namespace

/// Layer `layer`'s output: after the last op that reads one of its
/// parameters, the first point at which exactly one live value of the
/// stream reaches a later layer's (or no layer's) parameters and that value
/// is the layer's; failing that (a model whose layers are followed by no
/// parameter), at which exactly one value of the stream is live. A null
/// output if there is none.
static Value layerOutput(int64_t layer, const Positions &at,
                         const llvm::DenseMap<Value, int64_t> &layerOf,
                         bool anyValue = false) {
  int64_t start = -1;
  for (auto [i, op] : llvm::enumerate(at.ops))
    for (Value operand : op->getOperands())
      if (auto p = operand.getDefiningOp<ParamOp>())
        if (auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr);
            l && l.getInt() == layer)
          start = static_cast<int64_t>(i);
  if (start < 0)
    return nullptr;
  // The live set after op `start`, then kept as the sweep moves on (a few
  // ops, to the layer's end).
  llvm::SetVector<Value> live;
  for (auto [value, last] : at.lastRead)
    if (at.position.lookup(value.getDefiningOp()) <= start && last > start)
      live.insert(value);
  for (int64_t p = start;; ++p) {
    SmallVector<Value> onward;
    for (Value v : live)
      if (anyValue || at.goesOn(v, p, layer))
        onward.push_back(v);
    if (onward.size() == 1 &&
        layerOf.lookup_or(onward.front(), int64_t(-1)) == layer)
      return onward.front();
    if (p + 1 >= static_cast<int64_t>(at.ops.size()))
      return anyValue ? Value() : layerOutput(layer, at, layerOf, true);
    Operation *next = at.ops[p + 1];
    for (Value r : next->getResults())
      if (at.lastRead.lookup(r) > p + 1)
        live.insert(r);
    live.remove_if([&](Value v) { return at.lastRead.lookup(v) <= p + 1; });
  }
}

/// The error for a layer without a single output.
static LogicalResult noOutput(func::FuncOp forward, int64_t layer,
                              StringRef pass) {
  return forward.emitError(pass)
         << ": layer " << layer
         << " has no single output: after the last op reading its "
            "parameters, no point has exactly one value computed from the "
            "inputs or the layers live (a second stream, or a value passed "
            "across layers, cannot be cut)";
}

FailureOr<int64_t> weft::firstUnlikeLayer(func::FuncOp forward) {
  Block &body = forward.getBody().front();
  FailureOr<int64_t> layers = countLayers(body, "weft-slice-layers");
  if (failed(layers))
    return failure();
  llvm::DenseMap<Value, int64_t> layerOf = valueLayers(body);
  Positions at(body, layerOf, *layers);
  // A layer's ops: those of the layer from after the previous layer's
  // output to its own (what follows the last layer reads it, and so counts
  // as the last layer's), printed by name and result types.
  std::vector<std::string> kinds(*layers);
  int64_t from = -1;
  for (int64_t layer = 0; layer < *layers; ++layer) {
    Value output = layerOutput(layer, at, layerOf);
    if (!output)
      return noOutput(forward, layer, "weft-slice-layers");
    int64_t to = at.position.lookup(output.getDefiningOp());
    llvm::raw_string_ostream kind(kinds[layer]);
    for (Operation *op : at.ops) {
      auto param = dyn_cast<ParamOp>(op);
      auto l =
          param ? param->getAttrOfType<IntegerAttr>(kLayerAttr) : IntegerAttr();
      int64_t here = at.position.lookup(op);
      bool mine = param ? l && l.getInt() == layer
                        : here > from && here <= to && op->getNumResults() &&
                              layerOf.lookup_or(op->getResult(0), -1) == layer;
      if (!mine)
        continue;
      kind << op->getName() << ":";
      for (Type t : op->getResultTypes())
        kind << t << ";";
    }
    from = to;
    if (kinds[layer] != kinds[0])
      return layer;
  }
  return -1;
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
  Positions at(body, layerOf, layers);
  std::vector<Value> outputs;
  for (int64_t layer = keep - 1; layer < layers; ++layer) {
    outputs.push_back(layerOutput(layer, at, layerOf));
    if (!outputs.back())
      return noOutput(forward, layer, "weft-slice-layers");
  }
  // Each layer's side outputs: its values that what follows the layers
  // reads besides the last output (a mixture of experts' auxiliary losses),
  // in the order they are made.
  Value last = outputs.back(), cut = outputs.front();
  int64_t after = at.position.lookup(last.getDefiningOp());
  std::vector<SmallVector<Value>> sides(outputs.size());
  for (Operation *op : at.ops)
    for (Value v : op->getResults()) {
      int64_t layer = layerOf.lookup_or(v, int64_t(-1));
      if (layer >= keep - 1 && v != last && !isa<ParamOp>(op) &&
          at.position.lookup(op) <= after &&
          llvm::any_of(v.getUsers(), [&](Operation *user) {
            return at.position.lookup(user) > after;
          }))
        sides[layer - keep + 1].push_back(v);
    }
  auto mismatch = [&](int64_t layer, Value from, Value to) {
    return fail("layer " + Twine(keep - 1) + "'s output is " +
                llvm::formatv("{0}", to.getType()).str() + " but layer " +
                Twine(layer) + "'s is " +
                llvm::formatv("{0}", from.getType()).str() +
                "; what follows the layers cannot read the one for the "
                "other");
  };
  if (last.getType() != cut.getType())
    return mismatch(layers - 1, last, cut);
  // What follows the layers reads the kept last layer's output for the
  // last layer's, and its side outputs for each dropped layer's.
  for (size_t i = 1; i < sides.size(); ++i) {
    int64_t layer = keep - 1 + static_cast<int64_t>(i);
    if (sides[i].size() != sides[0].size())
      return fail("layer " + Twine(layer) + " leaves " +
                  Twine(sides[i].size()) +
                  " value(s) for what follows the layers besides its "
                  "output, layer " +
                  Twine(keep - 1) + " " + Twine(sides[0].size()));
    for (auto [from, to] : llvm::zip(sides[i], sides[0])) {
      if (from.getType() != to.getType())
        return mismatch(layer, from, to);
      from.replaceAllUsesWith(to);
    }
  }
  last.replaceAllUsesWith(cut);
  // Drop what fed only the later layers: the ops after the cut that no
  // longer feed the results, and the later layers' parameters wherever the
  // model declares them.
  int64_t from = at.position.lookup(cut.getDefiningOp());
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

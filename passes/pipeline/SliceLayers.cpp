//===- SliceLayers.cpp - a model cut to its first layers ------*- C++ -*-===//
//
// The planner (passes/planner/Planner.h) times a layer as the difference of
// the model with two layers and with one. The frontends build those from a
// config; a model read from .mlir is cut here, so the planner can plan any
// graph whose parameters carry `weft.layer`.
//
// Layers are found as weft-pipeline-assign-stages finds them (valueLayers:
// a value belongs to the latest layer it is computed from), and a layer's
// output by liveness in program order: between two layers, the residual
// stream is the one live activation that later layers' weights (or the
// head's) still read. Cutting to k layers makes what follows the layers
// read layer k-1's output for layer L-1's (and its side outputs, as
// auxiliary losses, for the dropped layers'), and drops what no longer
// feeds the function's results.
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
/// What the sweep needs of a block: where each op is; the stream (what is
/// computed from the function's inputs: its arguments, the embeddings'
/// output, every activation) with where each value is last read (the
/// terminator reads at the block's end); the weights (what is computed
/// from parameters and constants alone: a parameter, its compute-type
/// cast, its transpose) with the latest layer they come from (a parameter
/// outside the layers, as the final norm's or the head's, counts as after
/// them); and how far each op reaches: the latest layer whose weights it or
/// what it feeds reads. Values computed from constants alone (positions,
/// rotary tables) are neither: every layer may read them.
struct Positions {
  Positions(Block &body, int64_t layers) {
    for (BlockArgument arg : body.getArguments())
      lastRead[arg] = -1;
    for (Operation &op : body) {
      int64_t here = static_cast<int64_t>(ops.size());
      position[&op] = here;
      ops.push_back(&op);
      bool input = false;
      int64_t weight = -1;
      if (auto p = dyn_cast<ParamOp>(op)) {
        auto l = p->getAttrOfType<IntegerAttr>(kLayerAttr);
        weight = l ? l.getInt() : layers;
      }
      for (Value operand : op.getOperands()) {
        if (auto it = lastRead.find(operand); it != lastRead.end()) {
          input = true;
          it->second = std::max(it->second, here);
        }
        weight = std::max(weight, weights.lookup_or(operand, int64_t(-1)));
      }
      for (Value r : op.getResults()) {
        if (input)
          lastRead[r] = -1;
        else if (weight >= 0)
          weights[r] = weight;
      }
    }
    for (Operation *op : llvm::reverse(ops)) {
      int64_t reach = -1;
      for (Value r : op->getResults())
        reach = std::max(reach, reaches.lookup_or(r, int64_t(-1)));
      for (Value operand : op->getOperands())
        reach = std::max(reach, weights.lookup_or(operand, int64_t(-1)));
      opReach[op] = reach;
      for (Value operand : op->getOperands())
        if (lastRead.count(operand))
          reaches[operand] =
              std::max(reaches.lookup_or(operand, int64_t(-1)), reach);
    }
  }
  /// Whether `v`, read after op `p`, reaches a weight of a layer after
  /// `layer` (or of none).
  bool goesOn(Value v, int64_t p, int64_t layer) const {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      return position.lookup(user) > p && opReach.lookup(user) > layer;
    });
  }
  /// Where `v` is made: its op's position, -1 for an argument.
  int64_t madeAt(Value v) const {
    Operation *def = v.getDefiningOp();
    return def ? position.lookup(def) : -1;
  }
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position, opReach;
  llvm::DenseMap<Value, int64_t> lastRead, weights, reaches;
};
} // namespace

/// Layer `layer`'s output: after the last op that reads the stream with one
/// of the layer's weights, the first point at which exactly one live value
/// of the stream reaches a later layer's weights (or those after the
/// layers) and that value is the layer's; failing that (a model whose
/// layers are followed by no weight), at which exactly one value made in
/// the body is live. A null output if there is none.
static Value layerOutput(int64_t layer, const Positions &at,
                         const llvm::DenseMap<Value, int64_t> &layerOf,
                         bool anyValue = false) {
  int64_t start = -1;
  for (auto [i, op] : llvm::enumerate(at.ops)) {
    bool stream = false, mine = false;
    for (Value operand : op->getOperands()) {
      stream |= at.lastRead.count(operand) > 0;
      mine |= at.weights.lookup_or(operand, int64_t(-1)) == layer;
    }
    if (stream && mine)
      start = static_cast<int64_t>(i);
  }
  if (start < 0)
    return nullptr;
  // The live set after op `start`, then kept as the sweep moves on (a few
  // ops, to the layer's end).
  llvm::SetVector<Value> live;
  for (auto [value, last] : at.lastRead)
    if (at.madeAt(value) <= start && last > start)
      live.insert(value);
  for (int64_t p = start;; ++p) {
    SmallVector<Value> onward;
    for (Value v : live)
      if (anyValue ? !isa<BlockArgument>(v) : at.goesOn(v, p, layer))
        onward.push_back(v);
    if (onward.size() == 1 &&
        layerOf.lookup_or(onward.front(), int64_t(-1)) == layer)
      return onward.front();
    if (p + 1 >= static_cast<int64_t>(at.ops.size()))
      return anyValue ? Value() : layerOutput(layer, at, layerOf, true);
    Operation *next = at.ops[p + 1];
    for (Value r : next->getResults())
      if (at.lastRead.lookup_or(r, -1) > p + 1)
        live.insert(r);
    live.remove_if([&](Value v) { return at.lastRead.lookup(v) <= p + 1; });
  }
}

/// The error for a layer without a single output.
static LogicalResult noOutput(func::FuncOp forward, int64_t layer,
                              StringRef pass) {
  return forward.emitError(pass)
         << ": layer " << layer
         << " has no single output: after the last op reading its weights, "
            "no point has exactly one live value of the layer's that later "
            "layers (or the head) read (a second stream, or a value passed "
            "across layers, cannot be cut)";
}

FailureOr<int64_t> weft::firstUnlikeLayer(func::FuncOp forward) {
  if (forward.isExternal())
    return forward.emitError("weft-slice-layers: @")
           << forward.getSymName() << " has no body";
  Block &body = forward.getBody().front();
  FailureOr<int64_t> layers = countLayers(body, "weft-slice-layers");
  if (failed(layers))
    return failure();
  llvm::DenseMap<Value, int64_t> layerOf = valueLayers(body);
  Positions at(body, *layers);
  // A layer's ops: its parameters, and its ops from after the previous
  // layer's output to its own, printed by name and result types (not
  // attributes: each layer's dropout draws its own; what follows the
  // layers, and a layer's ops before its first weight read, which count as
  // the layer before's, are not compared).
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
  Positions at(body, layers);
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
      if (layer >= keep - 1 && v != last && at.lastRead.count(v) &&
          at.position.lookup(op) <= after &&
          llvm::any_of(v.getUsers(), [&](Operation *user) {
            return at.position.lookup(user) > after;
          }))
        sides[layer - keep + 1].push_back(v);
    }
  auto mismatch = [&](StringRef what, int64_t layer, Value from, Value to) {
    return fail("layer " + Twine(keep - 1) + "'s " + what + " is " +
                llvm::formatv("{0}", to.getType()).str() + " but layer " +
                Twine(layer) + "'s is " +
                llvm::formatv("{0}", from.getType()).str() +
                "; what follows the layers cannot read the one for the "
                "other");
  };
  if (last.getType() != cut.getType())
    return mismatch("output", layers - 1, last, cut);
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
    for (auto [j, pair] : llvm::enumerate(llvm::zip(sides[i], sides[0]))) {
      auto [from, to] = pair;
      if (from.getType() != to.getType())
        return mismatch("side output " + std::to_string(j), layer, from, to);
      from.replaceAllUsesWith(to);
    }
  }
  last.replaceAllUsesWith(cut);
  // Drop what fed only the later layers: the ops without effects that no
  // longer feed the results (the later layers', and their weights' casts
  // wherever they are made), and the later layers' parameters.
  for (Operation *op : llvm::reverse(at.ops)) {
    if (!op->use_empty())
      continue;
    auto param = dyn_cast<ParamOp>(op);
    auto layer =
        param ? param->getAttrOfType<IntegerAttr>(kLayerAttr) : IntegerAttr();
    if (param ? layer && layer.getInt() >= keep : wouldOpBeTriviallyDead(op))
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

//===- SliceLayers.cpp - a model cut to some of its layers -----*- C++ -*-===//
//
// The planner (passes/planner/Planner.h) times a layer as the difference of
// the model with two layers and with one. The frontends build those from a
// config; a model read from .mlir is cut here, so the planner can plan any
// graph whose parameters carry `weft.layer` (and, where its layers differ,
// time layer 0 with a layer of each kind: layerKinds).
//
// Layers are found as weft-pipeline-assign-stages finds them (valueLayers:
// a value belongs to the latest layer it is computed from), and a layer's
// output by liveness in program order: between two layers, the residual
// stream is the one live activation that later layers' weights (or the
// head's) still read. Dropping layers makes what read a dropped layer's
// output read the kept layer's before it (what follows the layers: the
// last kept layer's), a dropped layer's side outputs (auxiliary losses)
// read as a kept layer's, and drops what no longer feeds the results.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "passes/pipeline/Names.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

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
    // What each activation reaches, only while the ops' reach is found.
    llvm::DenseMap<Value, int64_t> reaches;
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
  llvm::DenseMap<Value, int64_t> lastRead, weights;
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

FailureOr<std::vector<int64_t>> weft::layerKinds(func::FuncOp forward) {
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
  std::vector<std::string> seen;
  std::vector<int64_t> kinds;
  int64_t from = -1;
  for (int64_t layer = 0; layer < *layers; ++layer) {
    Value output = layerOutput(layer, at, layerOf);
    if (!output)
      return noOutput(forward, layer, "weft-slice-layers");
    int64_t to = at.position.lookup(output.getDefiningOp());
    std::string text;
    llvm::raw_string_ostream kind(text);
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
    kinds.push_back(llvm::find(seen, text) - seen.begin());
    if (kinds.back() == static_cast<int64_t>(seen.size()))
      seen.push_back(std::move(text));
  }
  return kinds;
}

LogicalResult weft::sliceLayers(func::FuncOp forward, int64_t keep) {
  std::vector<int64_t> first;
  for (int64_t i = 0; i < keep; ++i)
    first.push_back(i);
  return sliceLayers(forward, ArrayRef<int64_t>(first));
}

LogicalResult weft::sliceLayers(func::FuncOp forward, ArrayRef<int64_t> keep) {
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
  if (keep.empty() || static_cast<int64_t>(keep.size()) > layers)
    return fail("cannot keep " + Twine(keep.size()) + " layers of @" +
                forward.getSymName() + "'s " + Twine(layers) +
                " (from 1 to all of them)");
  for (auto [i, layer] : llvm::enumerate(keep))
    if ((i == 0 && layer != 0) || (i && layer <= keep[i - 1]) ||
        layer >= layers)
      return fail("the layers kept must rise from 0 and stay below " +
                  Twine(layers) + "; got layer " + Twine(layer) + " in place " +
                  Twine(i));
  if (static_cast<int64_t>(keep.size()) == layers)
    return success();

  llvm::DenseMap<Value, int64_t> layerOf = valueLayers(body);
  Positions at(body, layers);
  std::vector<Value> outputs;
  for (int64_t layer = 0; layer < layers; ++layer) {
    outputs.push_back(layerOutput(layer, at, layerOf));
    if (!outputs.back())
      return noOutput(forward, layer, "weft-slice-layers");
  }
  std::vector<bool> kept(layers, false);
  for (int64_t layer : keep)
    kept[layer] = true;
  // Each layer's side outputs: its values that what follows the layers
  // reads besides the last output (a mixture of experts' auxiliary losses),
  // in the order they are made.
  Value last = outputs.back();
  int64_t after = at.position.lookup(last.getDefiningOp());
  std::vector<SmallVector<Value>> sides(layers);
  for (Operation *op : at.ops)
    for (Value v : op->getResults()) {
      int64_t layer = layerOf.lookup_or(v, int64_t(-1));
      if (layer >= 0 && v != last && at.lastRead.count(v) &&
          at.position.lookup(op) <= after &&
          llvm::any_of(v.getUsers(), [&](Operation *user) {
            return at.position.lookup(user) > after;
          }))
        sides[layer].push_back(v);
    }
  auto mismatch = [&](int64_t to, int64_t from) {
    return fail("layer " + Twine(to) + "'s output is " +
                llvm::formatv("{0}", outputs[to].getType()).str() +
                " but layer " + Twine(from) + "'s is " +
                llvm::formatv("{0}", outputs[from].getType()).str() +
                "; what reads the one cannot read the other");
  };
  // What read a dropped layer's output (the next kept layer, or what
  // follows the layers) reads the kept layer's before it.
  for (int64_t layer = 1, before = 0; layer <= layers; ++layer) {
    if (layer < layers && !kept[layer])
      continue;
    if (!kept[layer - 1]) {
      if (outputs[layer - 1].getType() != outputs[before].getType())
        return mismatch(before, layer - 1);
      outputs[layer - 1].replaceAllUsesWith(outputs[before]);
    }
    before = layer;
  }
  // What follows the layers reads a dropped layer's side outputs as those
  // of the nearest kept layer (before it first) that leaves the same ones.
  auto alike = [&](int64_t a, int64_t b) {
    return sides[a].size() == sides[b].size() &&
           llvm::all_of(llvm::zip(sides[a], sides[b]), [](auto pair) {
             return std::get<0>(pair).getType() == std::get<1>(pair).getType();
           });
  };
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (kept[layer] || sides[layer].empty())
      continue;
    std::optional<int64_t> like;
    for (int64_t k : llvm::reverse(keep))
      if (k < layer && alike(k, layer)) {
        like = k;
        break;
      }
    for (int64_t k : keep)
      if (!like && k > layer && alike(k, layer))
        like = k;
    if (!like)
      return fail("layer " + Twine(layer) + " leaves " +
                  Twine(sides[layer].size()) +
                  " value(s) for what follows the layers besides its "
                  "output, and no layer kept leaves the same");
    for (auto [from, to] : llvm::zip(sides[layer], sides[*like]))
      from.replaceAllUsesWith(to);
  }
  // Drop what fed only the dropped layers: the ops without effects that no
  // longer feed the results (the dropped layers', and their weights' casts
  // wherever they are made), and the dropped layers' parameters.
  for (Operation *op : llvm::reverse(at.ops)) {
    if (!op->use_empty())
      continue;
    auto param = dyn_cast<ParamOp>(op);
    auto layer =
        param ? param->getAttrOfType<IntegerAttr>(kLayerAttr) : IntegerAttr();
    if (param ? layer && !kept[layer.getInt()] : wouldOpBeTriviallyDead(op))
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
    if (failed(keep.empty() ? sliceLayers(forward, layers)
                            : sliceLayers(forward, ArrayRef<int64_t>(keep))))
      signalPassFailure();
  }
};
} // namespace

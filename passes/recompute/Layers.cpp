//===- Layers.cpp - a training graph's transformer layers -----------------===//

#include "passes/recompute/Layers.h"

#include "dialects/weft/IR/WeftOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace weft;

llvm::DenseSet<Operation *> weft::forwardOps(func::FuncOp func) {
  llvm::DenseSet<Operation *> forward;
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return forward;
  SmallVector<Value> work = {ret.getOperand(0)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    work.append(def->operand_begin(), def->operand_end());
  }
  return forward;
}

llvm::DenseMap<Operation *, int64_t>
weft::layersOf(func::FuncOp func, const llvm::DenseSet<Operation *> &forward) {
  llvm::DenseMap<Operation *, int64_t> layer;
  bool layered = false;
  for (Operation &op : func.getBody().front()) {
    if (!forward.contains(&op))
      continue;
    if (auto param = dyn_cast<ParamOp>(op)) {
      // State (dropout's step counter, FP8 amax histories) is read
      // everywhere and belongs to no layer: it neither ends the layers
      // nor moves an op into one.
      if (param.getState())
        continue;
      auto attr = op.getAttrOfType<IntegerAttr>(kLayerAttr);
      layer[&op] = attr ? attr.getInt() : kUnlayered;
      continue;
    }
    int64_t l = kPrologue;
    bool epilogue = false;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp(); def && layer.count(def)) {
        if (layer[def] == kUnlayered)
          epilogue |= layered;
        else
          l = std::max(l, layer[def]);
      }
    layer[&op] = epilogue ? kEpilogue : l;
    layered |= inLayers(layer[&op]);
  }
  return layer;
}

llvm::DenseSet<Value>
weft::activationsOf(func::FuncOp func,
                    const llvm::DenseSet<Operation *> &forward) {
  llvm::DenseSet<Value> activations;
  for (Operation &op : func.getBody().front())
    if (forward.contains(&op) && llvm::any_of(op.getOperands(), [&](Value v) {
          return isa<BlockArgument>(v) || activations.contains(v);
        }))
      activations.insert(op.getResults().begin(), op.getResults().end());
  return activations;
}

llvm::MapVector<int64_t, Value> weft::layerOutputs(func::FuncOp func) {
  llvm::DenseSet<Operation *> forward = forwardOps(func);
  llvm::DenseMap<Operation *, int64_t> layer = layersOf(func, forward);
  llvm::DenseSet<Value> activations = activationsOf(func, forward);
  llvm::MapVector<int64_t, Value> outputs;
  for (Operation &op : func.getBody().front()) {
    auto it = layer.find(&op);
    if (it == layer.end() || !inLayers(it->second))
      continue;
    for (Value r : op.getResults()) {
      if (!activations.contains(r))
        continue;
      bool leaves = llvm::any_of(r.getUsers(), [&](Operation *user) {
        auto u = layer.find(user);
        return u != layer.end() && u->second > it->second;
      });
      if (leaves)
        outputs[it->second] = r;
    }
  }
  return outputs;
}

std::string weft::layerName(func::FuncOp func, int64_t l) {
  std::string name;
  func.walk([&](ParamOp p) {
    auto attr = p->getAttrOfType<IntegerAttr>(kLayerAttr);
    // Parameters of the model, not state that takes a layer (a probe, an
    // amax history).
    if (!name.empty() || !attr || attr.getInt() != l || p.getState())
      return;
    SmallVector<StringRef> parts;
    p.getName().split(parts, '.');
    std::string prefix;
    for (StringRef part : parts) {
      prefix += (prefix.empty() ? "" : ".") + part.str();
      if (!part.empty() && llvm::all_of(part, llvm::isDigit)) {
        name = prefix;
        return;
      }
    }
  });
  return name.empty() ? "layer." + std::to_string(l) : name;
}

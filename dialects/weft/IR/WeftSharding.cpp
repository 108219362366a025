//===- WeftSharding.cpp - meshes and sharding attributes ------------------===//
//
// The dialect verifies `weft.sharding` wherever it appears (on op results and
// function arguments), so every pass that reads a sharding can trust it: the
// mesh exists, each axis exists and splits at most one dimension, and each
// split dimension divides evenly.
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftOps.h"

#include "dialects/common/MeshAxes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace weft;

int64_t MeshOp::axisSize(StringRef name) {
  return meshAxisSize(getAxes(), getSizes(), name);
}

LogicalResult MeshOp::verify() {
  // The graph's placement passes know these axes; sched meshes may name any.
  for (StringRef axis : getAxes().getAsValueRange<StringAttr>())
    if (axis != "dp" && axis != "tp" && axis != "pp" && axis != "ep" &&
        axis != "cp")
      return emitOpError("unknown axis name '")
             << axis << "' (axes: dp, tp, pp, ep, cp)";
  return verifyMeshAxes(*this, getAxes(), getSizes());
}

namespace {
/// Checks one value's sharding; `anchor` is where errors go and where the
/// mesh is looked up from.
LogicalResult verifySharding(Operation *anchor, Type valueType, Attribute attr,
                             StringRef what) {
  auto sharding = dyn_cast<ShardingAttr>(attr);
  if (!sharding)
    return anchor->emitOpError()
           << what << ": expected #weft.sharding, got " << attr;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(anchor, sharding.getMesh());
  if (!mesh)
    return anchor->emitOpError()
           << what << ": unknown mesh " << sharding.getMesh();
  auto type = dyn_cast<RankedTensorType>(valueType);
  if (!type)
    return anchor->emitOpError() << what << ": only tensors can be sharded";
  ArrayAttr dims = sharding.getDims();
  if (static_cast<int64_t>(dims.size()) != type.getRank())
    return anchor->emitOpError()
           << what << ": sharding has " << dims.size()
           << " dimension entries for a value of rank " << type.getRank();
  llvm::StringSet<> used;
  for (auto [d, entry] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(entry);
    if (!axes)
      return anchor->emitOpError()
             << what << ": dimension " << d << " needs a list of mesh axes";
    int64_t split = 1;
    for (Attribute a : axes) {
      auto axis = dyn_cast<StringAttr>(a);
      int64_t size = axis ? mesh.axisSize(axis.getValue()) : 0;
      if (!size)
        return anchor->emitOpError() << what << ": unknown mesh axis " << a
                                     << " of " << sharding.getMesh();
      if (!used.insert(axis.getValue()).second)
        return anchor->emitOpError()
               << what << ": mesh axis '" << axis.getValue()
               << "' splits more than one dimension";
      split *= size;
      if (type.getDimSize(d) % split != 0)
        return anchor->emitOpError()
               << what << ": dimension " << d << " of size "
               << type.getDimSize(d) << " is not divisible by mesh axis '"
               << axis.getValue() << "' (splitting it " << split << " ways)";
    }
  }
  return success();
}
} // namespace

LogicalResult WeftDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kVocabAxesAttr) {
    // Set by partitioning on vocabulary-parallel ops: the axes (of @mesh)
    // whose group splits the vocabulary.
    if (!isa<EmbeddingOp, EmbeddingGradOp, CrossEntropyOp, CrossEntropyGradOp>(
            op))
      return op->emitOpError("weft.vocab_axes is only for embedding and "
                             "cross-entropy ops");
    auto axes = dyn_cast<ArrayAttr>(attr.getValue());
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        op, StringAttr::get(op->getContext(), "mesh"));
    if (!axes || axes.empty() || !mesh)
      return op->emitOpError(
          "weft.vocab_axes needs a list of axes of a weft.mesh @mesh");
    for (Attribute a : axes) {
      auto axis = dyn_cast<StringAttr>(a);
      if (!axis || !mesh.axisSize(axis.getValue()))
        return op->emitOpError("weft.vocab_axes names ")
               << a << ", which is not an axis of @mesh";
    }
    return success();
  }
  if (name != kShardingAttr)
    return success(); // weft.kernel, weft.grad_of, ...: set by passes.
  auto list = dyn_cast<ArrayAttr>(attr.getValue());
  if (!list || list.size() != op->getNumResults())
    return op->emitOpError(
               "weft.sharding needs one #weft.sharding per result (")
           << op->getNumResults() << ")";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(op->getResultTypes(), list)))
    if (failed(verifySharding(op, std::get<0>(pair), std::get<1>(pair),
                              "result " + std::to_string(i))))
      return failure();
  return success();
}

LogicalResult WeftDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName().getValue() != kShardingAttr)
    return success();
  auto function = dyn_cast<FunctionOpInterface>(op);
  Type type = function ? function.getArgumentTypes()[argIndex]
                       : op->getRegion(region).getArgument(argIndex).getType();
  return verifySharding(op, type, attr.getValue(),
                        "argument " + std::to_string(argIndex));
}

ShardingAttr weft::getSharding(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto function =
        dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    return function ? function.getArgAttrOfType<ShardingAttr>(
                          arg.getArgNumber(), kShardingAttr)
                    : ShardingAttr();
  }
  auto result = cast<OpResult>(value);
  auto list = result.getOwner()->getAttrOfType<ArrayAttr>(kShardingAttr);
  if (!list || list.size() <= result.getResultNumber())
    return {};
  return dyn_cast<ShardingAttr>(list[result.getResultNumber()]);
}

void weft::setSharding(Value value, ShardingAttr sharding) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto function = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    function.setArgAttr(arg.getArgNumber(), kShardingAttr, sharding);
    return;
  }
  auto result = cast<OpResult>(value);
  Operation *op = result.getOwner();
  SmallVector<Attribute> list;
  for (OpResult r : op->getResults()) {
    if (r == result) {
      list.push_back(sharding);
      continue;
    }
    ShardingAttr old = getSharding(r);
    if (!old) {
      // Replicated: one empty axis list per dimension.
      auto type = cast<RankedTensorType>(r.getType());
      SmallVector<Attribute> dims(type.getRank(),
                                  ArrayAttr::get(op->getContext(), {}));
      old = ShardingAttr::get(op->getContext(), sharding.getMesh(),
                              ArrayAttr::get(op->getContext(), dims));
    }
    list.push_back(old);
  }
  op->setAttr(kShardingAttr, ArrayAttr::get(op->getContext(), list));
}

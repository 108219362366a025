//===- WeftCollectives.cpp - collective ops and their gradients -----------===//
//
// Collectives name a mesh and some of its axes; their shapes depend on the
// group size, so shapes are checked where the mesh is visible (symbol-use
// verification) rather than in the op verifiers, which see one op alone.
// Gradient rules follow Megatron-LM's conjugate pairs: all-reduce <->
// copy-to-group, all-gather <-> reduce-scatter, all-to-all <-> all-to-all.
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftEmitter.h"
#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace weft;

namespace {
/// The mesh `op` names, or an error on `op`. Checks every axis exists once.
FailureOr<MeshOp> lookupGroup(Operation *op, SymbolTableCollection &symbols,
                              FlatSymbolRefAttr meshRef, ArrayAttr axes) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError("unknown mesh ") << meshRef, failure();
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis"), failure();
  llvm::StringSet<> seen;
  for (StringRef axis : axes.getAsValueRange<StringAttr>()) {
    if (!mesh.axisSize(axis))
      return op->emitOpError("unknown mesh axis '")
                 << axis << "' of " << meshRef,
             failure();
    if (!seen.insert(axis).second)
      return op->emitOpError("mesh axis '") << axis << "' appears twice",
             failure();
  }
  return mesh;
}

int64_t groupSizeOf(Operation *op, FlatSymbolRefAttr meshRef, ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return 0;
  int64_t size = 1;
  for (StringRef axis : axes.getAsValueRange<StringAttr>())
    size *= mesh.axisSize(axis);
  return size;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

LogicalResult checkDim(Operation *op, Value input, int64_t dim,
                       StringRef name) {
  int64_t rank = static_cast<int64_t>(shapeOf(input).size());
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << name << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// Checks that `result` is `input` with `grown` multiplied and `shrunk`
/// divided by the group size (either may be -1 for none).
LogicalResult checkResharded(Operation *op, Value input, Value result,
                             int64_t group, int64_t grown, int64_t shrunk) {
  SmallVector<int64_t> expected(shapeOf(input));
  if (shrunk >= 0) {
    if (expected[shrunk] % group != 0)
      return op->emitOpError("dimension ")
             << shrunk << " of size " << expected[shrunk]
             << " does not split into " << group << " blocks";
    expected[shrunk] /= group;
  }
  if (grown >= 0)
    expected[grown] *= group;
  auto inType = cast<RankedTensorType>(input.getType());
  auto want = RankedTensorType::get(expected, inType.getElementType());
  if (result.getType() != want)
    return op->emitOpError("result type ")
           << result.getType() << " should be " << want << " for a group of "
           << group;
  return success();
}
} // namespace

#define WEFT_GROUP_SIZE(Op)                                                    \
  int64_t Op::groupSize() {                                                    \
    return groupSizeOf(*this, getMeshAttr(), getAxesAttr());                   \
  }
WEFT_GROUP_SIZE(AllReduceOp)
WEFT_GROUP_SIZE(CopyToGroupOp)
WEFT_GROUP_SIZE(AllGatherOp)
WEFT_GROUP_SIZE(ReduceScatterOp)
WEFT_GROUP_SIZE(AllToAllOp)
WEFT_GROUP_SIZE(RaggedAllToAllOp)
WEFT_GROUP_SIZE(ShardSliceOp)
#undef WEFT_GROUP_SIZE

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            AllReduceOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  for (Value input : adaptor.getInputs())
    inferred.push_back(input.getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

LogicalResult AllGatherOp::verify() {
  return checkDim(*this, getInput(), getDim(), "dim");
}
LogicalResult ReduceScatterOp::verify() {
  return checkDim(*this, getInput(), getDim(), "dim");
}
LogicalResult ShardSliceOp::verify() {
  return checkDim(*this, getInput(), getDim(), "dim");
}
LogicalResult AllToAllOp::verify() {
  if (failed(checkDim(*this, getInput(), getSplitDim(), "split")))
    return failure();
  return checkDim(*this, getInput(), getConcatDim(), "concat");
}

LogicalResult RaggedAllToAllOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() != 2 || out.getRank() != 2 ||
      in.getDimSize(1) != out.getDimSize(1) ||
      out.getDimSize(0) != static_cast<int64_t>(getRows()))
    return emitOpError("wants input [N, D] and result [rows, D] with rows = ")
           << getRows() << ", got " << in << " and " << out;
  if (getSendSizes().getType().getRank() != 1 ||
      getRecvSizes().getType().getRank() != 1)
    return emitOpError("send and receive sizes must be vectors");
  return success();
}

LogicalResult
RaggedAllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr())))
    return failure();
  int64_t g = groupSize();
  for (auto [name, sizes] : {std::pair{"send", getSendSizes()},
                             std::pair{"receive", getRecvSizes()}}) {
    int64_t n = sizes.getType().getDimSize(0);
    if (g > 0 && n % g != 0)
      return emitOpError("the group's ") << g << " members do not divide the "
                                         << n << " " << name << " segments";
  }
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr());
}
LogicalResult CopyToGroupOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr());
}
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr())))
    return failure();
  return checkResharded(*this, getInput(), getResult(), groupSize(), getDim(),
                        -1);
}
LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr())))
    return failure();
  return checkResharded(*this, getInput(), getResult(), groupSize(), -1,
                        getDim());
}
LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr())))
    return failure();
  return checkResharded(*this, getInput(), getResult(), groupSize(), -1,
                        getDim());
}
LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(lookupGroup(*this, symbols, getMeshAttr(), getAxesAttr())))
    return failure();
  return checkResharded(*this, getInput(), getResult(), groupSize(),
                        getConcatDim(), getSplitDim());
}

/// A point-to-point op's axis must be one of its mesh's, and its offset
/// must not name this rank itself.
static LogicalResult verifyPeer(Operation *op, SymbolTableCollection &symbols,
                                FlatSymbolRefAttr meshRef, StringAttr axis,
                                int64_t offset) {
  FailureOr<MeshOp> mesh =
      lookupGroup(op, symbols, meshRef, ArrayAttr::get(op->getContext(), axis));
  if (failed(mesh))
    return failure();
  int64_t size = mesh->axisSize(axis.getValue());
  if (offset % size == 0)
    return op->emitOpError("offset ")
           << offset << " along '" << axis.getValue() << "' (size " << size
           << ") names this rank itself";
  return success();
}
LogicalResult RingShiftOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, getMeshAttr(), getAxisAttr(), getOffset());
}
int64_t RingShiftOp::groupSize() {
  return groupSizeOf(*this, getMeshAttr(),
                     ArrayAttr::get(getContext(), getAxisAttr()));
}
LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, getMeshAttr(), getAxisAttr(), getOffset());
}
LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, getMeshAttr(), getAxisAttr(), getOffset());
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

using Grads = FailureOr<SmallVector<Value>>;

Grads AllReduceOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  if (getReduction() == ReduceKind::Max)
    return SmallVector<Value>(rg.size(), Value());
  SmallVector<Value> grads(rg);
  if (getReduction() == ReduceKind::Mean) {
    weft::detail::Emitter e{b, getLoc()};
    double scale = 1.0 / static_cast<double>(groupSize());
    for (Value &g : grads)
      if (g)
        g = e.mul(g, e.splatLike(g, scale));
  }
  return grads;
}

Grads CopyToGroupOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  auto sum = ReduceKindAttr::get(getContext(), ReduceKind::Sum);
  Value total = AllReduceOp::create(b, getLoc(), sum, ValueRange{rg.front()},
                                    getMeshAttr(), getAxesAttr())
                    .getResult(0);
  return SmallVector<Value>{total};
}

Grads AllGatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g =
      ReduceScatterOp::create(b, getLoc(), getInput().getType(), rg.front(),
                              getMeshAttr(), getAxesAttr(), getDimAttr());
  return SmallVector<Value>{g};
}

Grads ReduceScatterOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g = AllGatherOp::create(b, getLoc(), getInput().getType(), rg.front(),
                                getMeshAttr(), getAxesAttr(), getDimAttr());
  return SmallVector<Value>{g};
}

Grads AllToAllOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g = AllToAllOp::create(b, getLoc(), getInput().getType(), rg.front(),
                               getMeshAttr(), getAxesAttr(), getConcatDimAttr(),
                               getSplitDimAttr());
  return SmallVector<Value>{g};
}

Grads RaggedAllToAllOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g = RaggedAllToAllOp::create(
      b, getLoc(), getInput().getType(), rg.front(), getRecvSizes(),
      getSendSizes(), getMeshAttr(), getAxesAttr(),
      b.getI64IntegerAttr(getInput().getType().getDimSize(0)));
  return SmallVector<Value>{g, Value(), Value()};
}

Grads RingShiftOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  // What went to coordinate + offset comes back from it.
  Value g =
      RingShiftOp::create(b, getLoc(), rg.front(), getMeshAttr(), getAxisAttr(),
                          b.getI64IntegerAttr(-getOffset()));
  return SmallVector<Value>{g};
}

Grads ShardSliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg) {
  Value g = AllGatherOp::create(b, getLoc(), getInput().getType(), rg.front(),
                                getMeshAttr(), getAxesAttr(), getDimAttr());
  return SmallVector<Value>{g};
}

//===- Movement.cpp - reshapes, copies and casts as sched views/copies ---===//
//
// A reshape (and copy_to_group, an identity for autodiff's sake) is a view:
// no instruction. Transposes, broadcasts, slices, concatenation parts, casts
// and one rank's block of a replicated value (shard_slice) are each one
// strided sched.copy on the values as stored.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

using namespace mlir;

namespace weft::codegen {
namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// A strided copy of `sizes` elements: src = [offset, strides...] into a
/// contiguous destination.
void stridedCopy(ProgramLowering &l, Location loc, Value from, Value to,
                 ArrayRef<int64_t> sizes, int64_t srcOffset,
                 ArrayRef<int64_t> srcStrides, int64_t dstOffset,
                 ArrayRef<int64_t> dstStrides) {
  if (llvm::is_contained(sizes, 0))
    return;
  OpBuilder &b = l.builder();
  SmallVector<int64_t> src = {srcOffset}, dst = {dstOffset};
  llvm::append_range(src, srcStrides);
  llvm::append_range(dst, dstStrides);
  sched::CopyOp::create(b, loc, from, to, b.getDenseI64ArrayAttr(sizes),
                        b.getDenseI64ArrayAttr(src),
                        b.getDenseI64ArrayAttr(dst), FlatSymbolRefAttr(),
                        ArrayAttr(), IntegerAttr(), b.getStringAttr("compute"));
}

LogicalResult lowerReshape(ReshapeOp op, ProgramLowering &l) {
  sched::BufferType type = ProgramLowering::bufferType(op.getType());
  l.bind(op.getResult(), l.view(l.stored(op.getInput()), 0, type.getShape(),
                                type.getElementType()));
  return success();
}

LogicalResult lowerCopyToGroup(CopyToGroupOp op, ProgramLowering &l) {
  l.bind(op.getResult(), l.stored(op.getInput()));
  return success();
}

LogicalResult lowerFp8QuantizeGrad(Fp8QuantizeGradOp op, ProgramLowering &l) {
  l.bind(op.getResult(), l.stored(op.getInput()));
  return success();
}

LogicalResult lowerTranspose(TransposeOp op, ProgramLowering &l) {
  SmallVector<int64_t> in = rowMajorStrides(shapeOf(op.getInput())), src;
  for (int64_t d : op.getPermutation())
    src.push_back(in[d]);
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  stridedCopy(l, op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()),
              out, 0, src, 0, rowMajorStrides(out));
  return success();
}

LogicalResult lowerBroadcast(BroadcastOp op, ProgramLowering &l) {
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  SmallVector<int64_t> in = rowMajorStrides(inShape);
  // Result dimension dims[i] reads input dimension i (stride 0 where the
  // input has size 1); the others repeat it.
  SmallVector<int64_t> src(out.size(), 0);
  for (auto [i, d] : llvm::enumerate(op.getDims()))
    if (inShape[i] != 1)
      src[d] = in[i];
  stridedCopy(l, op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()),
              out, 0, src, 0, rowMajorStrides(out));
  return success();
}

LogicalResult lowerSlice(SliceOp op, ProgramLowering &l) {
  SmallVector<int64_t> in = rowMajorStrides(shapeOf(op.getInput()));
  int64_t offset = 0;
  for (auto [start, stride] : llvm::zip(op.getStarts(), in))
    offset += start * stride;
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  stridedCopy(l, op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()),
              out, offset, in, 0, rowMajorStrides(out));
  return success();
}

LogicalResult lowerConcat(ConcatOp op, ProgramLowering &l) {
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  SmallVector<int64_t> dst = rowMajorStrides(out);
  Value result = l.define(op.getResult());
  int64_t dim = op.getDim(), at = 0;
  for (Value input : op.getInputs()) {
    ArrayRef<int64_t> part = shapeOf(input);
    stridedCopy(l, op.getLoc(), l.stored(input), result, part, 0,
                rowMajorStrides(part), at * dst[dim], dst);
    at += part[dim];
  }
  return success();
}

LogicalResult lowerCast(CastOp op, ProgramLowering &l) {
  l.copyAll(op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()));
  return success();
}

/// This rank's block along `dim` of a value every rank of the group holds:
/// [outer, block * inner] rows of the whole, starting at the rank's block.
LogicalResult lowerShardSlice(ShardSliceOp op, ProgramLowering &l) {
  ArrayRef<int64_t> whole = shapeOf(op.getInput());
  ArrayRef<int64_t> part = shapeOf(op.getResult());
  int64_t dim = op.getDim();
  int64_t inner = 1, outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole[d];
  for (size_t d = dim + 1; d < whole.size(); ++d)
    inner *= whole[d];
  int64_t row = part[dim] * inner;
  if (outer * row == 0)
    return success();
  OpBuilder &b = l.builder();
  sched::CopyOp::create(
      b, op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()),
      b.getDenseI64ArrayAttr({outer, row}),
      b.getDenseI64ArrayAttr({0, whole[dim] * inner, 1}),
      b.getDenseI64ArrayAttr({0, row, 1}), op.getMeshAttr(), op.getAxes(),
      b.getI64IntegerAttr(row), b.getStringAttr("compute"));
  return success();
}

} // namespace

void populateMovementLowerings(LoweringTable &table) {
  addLowering(table, lowerReshape);
  addLowering(table, lowerCopyToGroup);
  addLowering(table, lowerFp8QuantizeGrad);
  addLowering(table, lowerTranspose);
  addLowering(table, lowerBroadcast);
  addLowering(table, lowerSlice);
  addLowering(table, lowerConcat);
  addLowering(table, lowerCast);
  addLowering(table, lowerShardSlice);
}

} // namespace weft::codegen

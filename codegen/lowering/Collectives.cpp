//===- Collectives.cpp - weft collectives as sched.collective ------------===//
//
// Reductions move f32 (a narrow value goes through an f32 copy, as the
// bucket DDP reduces in is f32); an all-gather, which only moves, moves a
// bf16 or f16 value as stored (half the bytes, as FSDP's mixed precision
// gathers). A bucket of several all-reduced tensors is
// one f32 buffer: each member is copied into its place, the bucket is
// reduced in place, and f32 results are views of it. A collective along an
// inner dimension packs its blocks contiguously first (and unpacks after):
// the libraries exchange contiguous blocks only.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

using namespace mlir;

namespace weft::codegen {
namespace {

/// A tensor of shape `whole` split along `dim` into `g` blocks, walked as
/// [g, outer, block row] (block j = whole[:, j b : (j + 1) b, :]).
struct Split {
  SmallVector<int64_t> sizes, whole, blocks;
  int64_t elements = 0; // Of one block.
  bool contiguous = false;
};

Split splitOf(ArrayRef<int64_t> whole, int64_t dim, int64_t g) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole[d];
  for (size_t d = dim + 1; d < whole.size(); ++d)
    inner *= whole[d];
  int64_t b = whole[dim] / g, row = b * inner;
  Split s;
  s.sizes = {g, outer, row};
  s.whole = {0, row, whole[dim] * inner, 1};
  s.blocks = {0, outer * row, row, 1};
  s.elements = outer * row;
  s.contiguous = outer == 1;
  return s;
}

void copy(ProgramLowering &l, Location loc, Value from, Value to,
          const Split &s, bool pack) {
  if (s.elements == 0)
    return;
  OpBuilder &b = l.builder();
  sched::CopyOp::create(b, loc, from, to, b.getDenseI64ArrayAttr(s.sizes),
                        b.getDenseI64ArrayAttr(pack ? s.whole : s.blocks),
                        b.getDenseI64ArrayAttr(pack ? s.blocks : s.whole),
                        FlatSymbolRefAttr(), ArrayAttr(), IntegerAttr(),
                        b.getStringAttr("compute"));
}

void collective(ProgramLowering &l, Location loc, sched::CollectiveKind kind,
                sched::Reduction reduction, Value in, Value out,
                ArrayAttr axes) {
  OpBuilder &b = l.builder();
  sched::CollectiveOp::create(
      b, loc, sched::CollectiveKindAttr::get(l.context(), kind),
      sched::ReductionAttr::get(l.context(), reduction), in, out, l.mesh(),
      axes, b.getStringAttr("compute"));
}

int64_t elementsOf(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}

LogicalResult lowerAllReduce(AllReduceOp op, ProgramLowering &l) {
  sched::Reduction reduction =
      op.getReduction() == ReduceKind::Mean  ? sched::Reduction::mean
      : op.getReduction() == ReduceKind::Max ? sched::Reduction::max
                                             : sched::Reduction::sum;
  Type f32 = l.builder().getF32Type();
  if (op.getInputs().size() == 1) {
    Value in = l.read(op, op.getInputs()[0], /*f32=*/true);
    Value out = l.write(op, op.getResult(0), /*f32=*/true);
    collective(l, op.getLoc(), sched::CollectiveKind::all_reduce, reduction, in,
               out, op.getAxes());
    return success();
  }
  int64_t total = 0;
  for (Value v : op.getInputs())
    total += elementsOf(v);
  Value bucket = l.alloc({total}, f32);
  int64_t at = 0;
  for (Value v : op.getInputs()) {
    l.copyAll(op.getLoc(), l.stored(v),
              l.view(bucket, at * 4, {elementsOf(v)}, f32));
    at += elementsOf(v);
  }
  collective(l, op.getLoc(), sched::CollectiveKind::all_reduce, reduction,
             bucket, bucket, op.getAxes());
  at = 0;
  for (Value r : op.getResults()) {
    auto type = ProgramLowering::bufferType(r.getType());
    Value part = l.view(bucket, at * 4, type.getShape(), f32);
    if (type.getElementType().isF32())
      l.bind(r, part);
    else
      l.copyAll(op.getLoc(), part, l.define(r));
    at += elementsOf(r);
  }
  return success();
}

LogicalResult lowerAllGather(AllGatherOp op, ProgramLowering &l) {
  if (l.fp8GatherSource(op))
    return lowerFp8Gather(op, l);
  if (Operation *q = l.fp8DecodedGatherSource(op))
    return lowerFp8DecodedGather(op, l.fp8Codes(q), l);
  // As stored where the target moves it so (SchedTarget::keepsStored).
  gatherInto(l, op, l.read(op, op.getInput(), /*f32=*/false),
             l.write(op, op.getResult(), /*f32=*/false));
  return success();
}

LogicalResult lowerReduceScatter(ReduceScatterOp op, ProgramLowering &l) {
  ArrayRef<int64_t> whole =
      cast<ShapedType>(op.getInput().getType()).getShape();
  Split s = splitOf(whole, op.getDim(), l.groupSize(op.getAxes()));
  Value in = l.read(op, op.getInput(), /*f32=*/true);
  Value blocks = in;
  if (!s.contiguous) {
    blocks = l.alloc({s.sizes[0] * s.elements}, l.builder().getF32Type());
    copy(l, op.getLoc(), in, blocks, s, /*pack=*/true);
  }
  collective(l, op.getLoc(), sched::CollectiveKind::reduce_scatter,
             sched::Reduction::sum, blocks,
             l.write(op, op.getResult(), /*f32=*/true), op.getAxes());
  return success();
}

LogicalResult lowerAllToAll(AllToAllOp op, ProgramLowering &l) {
  int64_t g = l.groupSize(op.getAxes());
  if (!isWeftFloat(op.getInput().getType().getElementType())) {
    // Integers (an expert route's counts) move as stored, whole blocks.
    if (op.getSplitDim() != 0 || op.getConcatDim() != 0)
      return op.emitOpError("exchanges integers only along dimension 0");
    collective(l, op.getLoc(), sched::CollectiveKind::all_to_all,
               sched::Reduction::none, l.stored(op.getInput()),
               l.define(op.getResult()), op.getAxes());
    return success();
  }
  Split out = splitOf(cast<ShapedType>(op.getInput().getType()).getShape(),
                      op.getSplitDim(), g);
  Split in = splitOf(cast<ShapedType>(op.getResult().getType()).getShape(),
                     op.getConcatDim(), g);
  Type f32 = l.builder().getF32Type();
  Value x = l.read(op, op.getInput(), /*f32=*/true);
  Value y = l.write(op, op.getResult(), /*f32=*/true);
  Value sent = out.contiguous ? x : l.alloc({g * out.elements}, f32);
  if (!out.contiguous)
    copy(l, op.getLoc(), x, sent, out, /*pack=*/true);
  Value received = in.contiguous ? y : l.alloc({g * in.elements}, f32);
  collective(l, op.getLoc(), sched::CollectiveKind::all_to_all,
             sched::Reduction::none, sent, received, op.getAxes());
  if (!in.contiguous)
    copy(l, op.getLoc(), received, y, in, /*pack=*/false);
  return success();
}

// Rows move as f32 (as the kernels around them compute), on the compute
// stream: it is issued in program order with the expert kernels whose
// counts it reads.
LogicalResult lowerRaggedAllToAll(RaggedAllToAllOp op, ProgramLowering &l) {
  OpBuilder &b = l.builder();
  Value x = l.read(op, op.getInput(), /*f32=*/true);
  auto instr = sched::RaggedAllToAllOp::create(
      b, op.getLoc(), x, l.stored(op.getSendSizes()),
      l.stored(op.getRecvSizes()), l.write(op, op.getResult(), /*f32=*/true),
      Value(), l.mesh(), op.getAxes(), b.getStringAttr("compute"));
  return l.addGpuScratch(op, instr);
}

// Point-to-point moves bytes as stored: no f32 widening.
LogicalResult lowerSend(SendOp op, ProgramLowering &l) {
  OpBuilder &b = l.builder();
  sched::SendOp::create(b, op.getLoc(), l.stored(op.getInput()), l.mesh(),
                        op.getAxisAttr(), op.getOffsetAttr(), op.getTagAttr(),
                        b.getStringAttr("compute"));
  return success();
}

LogicalResult lowerRecv(RecvOp op, ProgramLowering &l) {
  OpBuilder &b = l.builder();
  sched::RecvOp::create(b, op.getLoc(), l.define(op.getResult()), l.mesh(),
                        op.getAxisAttr(), op.getOffsetAttr(), op.getTagAttr(),
                        b.getStringAttr("compute"));
  return success();
}

// One exchange (the GPU's grouped send and receive; the CPU pipeline splits
// ring shifts into sends and receives before lowering instead). Bytes as
// stored. The tag counts the function's ring shifts from 2^20, as
// weft-split-ring-shifts numbers its pairs.
LogicalResult lowerRingShift(RingShiftOp op, ProgramLowering &l) {
  OpBuilder &b = l.builder();
  int64_t tag = int64_t(1) << 20;
  for (Operation &prior : *op->getBlock()) {
    if (&prior == op.getOperation())
      break;
    tag += isa<RingShiftOp>(prior);
  }
  sched::RingShiftOp::create(
      b, op.getLoc(), l.stored(op.getInput()), l.define(op.getResult()),
      l.mesh(), op.getAxisAttr(), op.getOffsetAttr(), b.getI64IntegerAttr(tag),
      b.getStringAttr("compute"));
  return success();
}

} // namespace

void gatherInto(ProgramLowering &l, Location loc, ArrayAttr axes,
                ArrayRef<int64_t> whole, int64_t dim, Value in, Value out) {
  Split s = splitOf(whole, dim, l.groupSize(axes));
  Value blocks =
      s.contiguous
          ? out
          : l.alloc({s.sizes[0] * s.elements},
                    cast<sched::BufferType>(out.getType()).getElementType());
  collective(l, loc, sched::CollectiveKind::all_gather, sched::Reduction::none,
             in, blocks, axes);
  if (!s.contiguous)
    copy(l, loc, blocks, out, s, /*pack=*/false);
}

void gatherInto(ProgramLowering &l, AllGatherOp op, Value in, Value out) {
  gatherInto(l, op.getLoc(), op.getAxes(),
             cast<ShapedType>(op.getResult().getType()).getShape(), op.getDim(),
             in, out);
}

void populateCollectiveLowerings(LoweringTable &table) {
  addLowering(table, lowerRingShift);
  addLowering(table, lowerAllReduce);
  addLowering(table, lowerAllGather);
  addLowering(table, lowerReduceScatter);
  addLowering(table, lowerAllToAll);
  addLowering(table, lowerRaggedAllToAll);
  addLowering(table, lowerSend);
  addLowering(table, lowerRecv);
}

} // namespace weft::codegen

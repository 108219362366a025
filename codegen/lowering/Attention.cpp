//===- Attention.cpp - attention by the algorithm the compiler picks -----===//
//
// On the GPU, attention whose [B, Hq, S, T] f32 scores (twice that for the
// backward: probabilities and their gradient) fit the scratch budget runs
// as GEMMs around a softmax kernel over materialised scores; larger ones
// run FlashAttention's fused kernels. The CPU computes row by row and needs
// no scratch: it is lowered as `flash`.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

using namespace mlir;

namespace weft::codegen {
namespace {

/// The scratch attention needs on this target (null: flash).
Value scratchFor(ProgramLowering &l, Value query, Value key, int64_t copies) {
  if (!l.target().cuda)
    return Value();
  ArrayRef<int64_t> q = cast<ShapedType>(query.getType()).getShape();
  ArrayRef<int64_t> k = cast<ShapedType>(key.getType()).getShape();
  int64_t scores = q[0] * q[2] * q[1] * k[1]; // B * Hq * S * T
  if (scores * 4 * copies > l.target().attentionScratchBytes)
    return Value();
  return l.alloc({scores * copies}, l.builder().getF32Type());
}

sched::AttentionAlgorithmAttr algorithm(ProgramLowering &l, Value scratch) {
  return sched::AttentionAlgorithmAttr::get(
      l.context(), scratch ? sched::AttentionAlgorithm::gemm_softmax
                           : sched::AttentionAlgorithm::flash);
}

LogicalResult lowerAttention(AttentionOp op, ProgramLowering &l) {
  Value q = l.read(op, op.getQuery()), k = l.read(op, op.getKey()),
        v = l.read(op, op.getValue());
  Value out = l.write(op, op.getResult()), lse = l.write(op, op.getLse());
  Value scratch = scratchFor(l, op.getQuery(), op.getKey(), 1);
  sched::AttentionOp::create(l.builder(), op.getLoc(), q, k, v, out, lse,
                             scratch, op.getScaleAttr(), op.getCausalAttr(),
                             algorithm(l, scratch),
                             l.builder().getStringAttr("compute"));
  return success();
}

LogicalResult lowerAttentionGrad(AttentionGradOp op, ProgramLowering &l) {
  Value q = l.read(op, op.getQuery()), k = l.read(op, op.getKey()),
        v = l.read(op, op.getValue()), o = l.read(op, op.getResult()),
        lse = l.read(op, op.getLse()), dout = l.read(op, op.getGrad());
  Value dq = l.write(op, op.getQueryGrad()), dk = l.write(op, op.getKeyGrad()),
        dv = l.write(op, op.getValueGrad());
  Value scratch = scratchFor(l, op.getQuery(), op.getKey(), 2);
  sched::AttentionGradOp::create(l.builder(), op.getLoc(), q, k, v, o, lse,
                                 dout, dq, dk, dv, scratch, op.getScaleAttr(),
                                 op.getCausalAttr(), algorithm(l, scratch),
                                 l.builder().getStringAttr("compute"));
  return success();
}

} // namespace

void populateAttentionLowerings(LoweringTable &table) {
  addLowering(table, lowerAttention);
  addLowering(table, lowerAttentionGrad);
}

} // namespace weft::codegen

//===- Attention.cpp - attention by the algorithm the compiler picks -----===//
//
// On the GPU, attention whose scores and probabilities fit the scratch
// budget (and whose rows align for cuBLASLt) runs as GEMMs around a softmax
// kernel over materialised scores; others run FlashAttention's fused
// kernels. The CPU computes row by row and needs no scratch: it is lowered
// as `flash`. Its scratch is as scratch::attentionLayout
// (dialects/sched/IR/ScratchLayout.h) states, for the lowering, the
// verifier, the bundle loader and the GPU runtime alike.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

#include "dialects/sched/IR/ScratchLayout.h"

using namespace mlir;

namespace weft::codegen {
namespace {

/// The algorithm on this target: the CPU runs row by row (flash, no
/// scratch); the GPU uses cuBLASLt GEMMs around a softmax when their
/// scratch fits the budget and the rows align, else FlashAttention's
/// kernels (whose backward keeps its delta in scratch).
FailureOr<sched::AttentionAlgorithm> choose(Operation *op, ProgramLowering &l,
                                            Value query, Value key, Value value,
                                            bool grad, bool byPositions) {
  using sched::AttentionAlgorithm;
  // The GEMM path masks by index only: positions and an lse gradient (ring
  // attention) take the flash kernels.
  if (!l.target().cuda || byPositions)
    return AttentionAlgorithm::flash;
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  ArrayRef<int64_t> q = shape(query), k = shape(key), v = shape(value);
  int64_t es = ProgramLowering::bufferType(query.getType()).getElementBytes();
  std::optional<sched::scratch::AttentionLayout> gemms =
      sched::scratch::attentionLayout(/*gemmSoftmax=*/true, grad, q[0], q[1],
                                      q[2], k[1], es);
  if (gemms && gemms->bytes <= l.target().attentionScratchBytes &&
      sched::scratch::attentionRowsAligned(q[1], k[1], q[3], v[3], es))
    return AttentionAlgorithm::gemm_softmax;
  // The fused kernels keep a row of Q and of the output in registers: their
  // head dimension is bounded, the GEMMs' is not.
  if (q[3] > 128 || v[3] > 128) {
    auto diag = op->emitOpError("FlashAttention's GPU kernels take head "
                                "dimensions of at most 128, got ")
                << q[3] << " and " << v[3]
                << "; attention through GEMMs takes any, but ";
    if (!gemms)
      diag << "its scores would not fit any scratch";
    else if (gemms->bytes > l.target().attentionScratchBytes)
      diag << "its scores need " << (gemms->bytes + (1 << 20) - 1) / (1 << 20)
           << " MiB of scratch here, more than --attention-scratch-mb "
              "allows";
    else
      diag << "cuBLASLt needs its rows 16-byte aligned, and these are not";
    return failure();
  }
  return AttentionAlgorithm::flash;
}

/// Dropout's step and micro-batch counters as the kernels read them (f32),
/// or null for none.
template <typename Op>
std::pair<Value, Value> counters(Op op, ProgramLowering &l) {
  return {op.getStep() ? l.read(op, op.getStep()) : Value(),
          op.getMicrobatch() ? l.read(op, op.getMicrobatch()) : Value()};
}

/// The positions' buffers as stored (i32), or null for none.
std::pair<Value, Value> positions(ProgramLowering &l, Value query, Value key) {
  if (!query)
    return {Value(), Value()};
  return {l.stored(query), l.stored(key)};
}

LogicalResult lowerAttention(AttentionOp op, ProgramLowering &l) {
  Value q = l.read(op, op.getQuery()), k = l.read(op, op.getKey()),
        v = l.read(op, op.getValue());
  Value out = l.write(op, op.getResult()), lse = l.write(op, op.getLse());
  auto [qpos, kpos] =
      positions(l, op.getQueryPositions(), op.getKeyPositions());
  auto chosen = choose(op, l, op.getQuery(), op.getKey(), op.getValue(),
                       /*grad=*/false, static_cast<bool>(qpos));
  if (failed(chosen))
    return failure();
  // An entropy of these probabilities is computed in the same pass (a
  // second one of the same is the same buffer).
  Value entropy;
  for (Operation *user : op.getLse().getUsers())
    if (auto e = dyn_cast<AttentionEntropyOp>(user);
        e && e.getFusableAttention() == op) {
      if (entropy)
        l.bind(e.getResult(), entropy);
      else
        entropy = l.write(e, e.getResult());
      l.elide(e);
    }
  auto [step, microbatch] = counters(op, l);
  auto instr = sched::AttentionOp::create(
      l.builder(), op.getLoc(), q, k, v, out, lse, qpos, kpos, entropy, step,
      microbatch, Value(), op.getScaleAttr(), op.getCausalAttr(),
      sched::AttentionAlgorithmAttr::get(l.context(), *chosen),
      op.getDropoutAttr(), op.getSeedAttr(), op.getSplitAttr(),
      op.getMicrobatchesAttr(), l.builder().getStringAttr("compute"));
  return l.addGpuScratch(op, instr);
}

/// An entropy no attention's pass computes (its operands were placed apart
/// from the attention's, or it reads another lse): an attention of its
/// own, the keys standing in for the values, whose output and lse are
/// thrown away.
LogicalResult lowerAttentionEntropy(AttentionEntropyOp op, ProgramLowering &l) {
  Value q = l.read(op, op.getQuery()), k = l.read(op, op.getKey());
  auto [qpos, kpos] =
      positions(l, op.getQueryPositions(), op.getKeyPositions());
  auto chosen = choose(op, l, op.getQuery(), op.getKey(), op.getKey(),
                       /*grad=*/false, static_cast<bool>(qpos));
  if (failed(chosen))
    return failure();
  auto qType = cast<sched::BufferType>(q.getType());
  Value out = l.alloc(qType.getShape(), qType.getElementType());
  Value lse = l.alloc(op.getType().getShape(), l.builder().getF32Type());
  Value entropy = l.write(op, op.getResult());
  auto instr = sched::AttentionOp::create(
      l.builder(), op.getLoc(), q, k, k, out, lse, qpos, kpos, entropy, Value(),
      Value(), Value(), op.getScaleAttr(), op.getCausalAttr(),
      sched::AttentionAlgorithmAttr::get(l.context(), *chosen), FloatAttr(),
      IntegerAttr(), ArrayAttr(), IntegerAttr(),
      l.builder().getStringAttr("compute"));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerAttentionGrad(AttentionGradOp op, ProgramLowering &l) {
  Value q = l.read(op, op.getQuery()), k = l.read(op, op.getKey()),
        v = l.read(op, op.getValue()), o = l.read(op, op.getResult()),
        lse = l.read(op, op.getLse()), dout = l.read(op, op.getGrad());
  Value dq = l.write(op, op.getQueryGrad()), dk = l.write(op, op.getKeyGrad()),
        dv = l.write(op, op.getValueGrad());
  auto [qpos, kpos] =
      positions(l, op.getQueryPositions(), op.getKeyPositions());
  Value lseGrad = op.getLseGrad() ? l.read(op, op.getLseGrad()) : Value();
  auto chosen = choose(op, l, op.getQuery(), op.getKey(), op.getValue(),
                       /*grad=*/true, qpos || lseGrad);
  if (failed(chosen))
    return failure();
  auto [step, microbatch] = counters(op, l);
  auto instr = sched::AttentionGradOp::create(
      l.builder(), op.getLoc(), q, k, v, o, lse, dout, dq, dk, dv, qpos, kpos,
      lseGrad, step, microbatch, Value(), op.getScaleAttr(), op.getCausalAttr(),
      sched::AttentionAlgorithmAttr::get(l.context(), *chosen),
      op.getDropoutAttr(), op.getSeedAttr(), op.getSplitAttr(),
      op.getMicrobatchesAttr(), l.builder().getStringAttr("compute"));
  return l.addGpuScratch(op, instr);
}

} // namespace

void populateAttentionLowerings(LoweringTable &table) {
  addLowering(table, lowerAttention);
  addLowering(table, lowerAttentionGrad);
  addLowering(table, lowerAttentionEntropy);
}

} // namespace weft::codegen

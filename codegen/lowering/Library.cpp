//===- Library.cpp - weft ops the runtime has its own kernels for --------===//
//
// Embedding, RoPE, cross-entropy, reductions, softmax, dropout, norm
// gradients and MoE routing each become the sched instruction of the same
// name, every attribute spelled (the runtime has no defaults), operands
// read and results written in the type the target's kernel computes in
// (ProgramLowering::read / write), and a vocabulary-parallel op's
// `weft.vocab_axes` carried as the instruction's group. On the GPU,
// reductions, norm gradients and cross-entropy are several kernels: for the
// cuda target each gets the scratch its shapes need
// (dialects/sched/IR/ScratchLayout.h), which the memory plan places; the
// CPU's kernels need none. A partitioned expert route's `weft.token_axes`
// becomes its instruction's group, as `weft.vocab_axes` does.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

using namespace mlir;

namespace weft::codegen {
namespace {

StringAttr compute(ProgramLowering &l) {
  return l.builder().getStringAttr("compute");
}

BoolAttr boolAttr(ProgramLowering &l, bool value) {
  return l.builder().getBoolAttr(value);
}

LogicalResult lowerEmbedding(EmbeddingOp op, ProgramLowering &l) {
  Value table = l.read(op, op.getTable()), ids = l.stored(op.getIds());
  sched::EmbeddingOp::create(l.builder(), op.getLoc(), table, ids,
                             l.write(op, op.getResult()), vocabAxes(op),
                             compute(l));
  return success();
}

LogicalResult lowerEmbeddingGrad(EmbeddingGradOp op, ProgramLowering &l) {
  Value ids = l.stored(op.getIds()), dout = l.read(op, op.getGrad());
  sched::EmbeddingGradOp::create(l.builder(), op.getLoc(), ids, dout,
                                 l.write(op, op.getResult()), vocabAxes(op),
                                 compute(l));
  return success();
}

LogicalResult lowerRope(RopeOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput());
  Value positions = op.getPositions() ? l.stored(op.getPositions()) : Value();
  sched::RopeOp::create(l.builder(), op.getLoc(), x,
                        l.write(op, op.getResult()), positions,
                        op.getThetaAttr(), op.getPositionOffsetAttr(),
                        boolAttr(l, op.getInverse()), compute(l));
  return success();
}

LogicalResult lowerCrossEntropy(CrossEntropyOp op, ProgramLowering &l) {
  Value logits = l.read(op, op.getLogits()), labels = l.stored(op.getLabels());
  auto instr = sched::CrossEntropyOp::create(
      l.builder(), op.getLoc(), logits, labels, l.write(op, op.getResult()),
      op.getIgnoreIndexAttr(), vocabAxes(op), Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerCrossEntropyGrad(CrossEntropyGradOp op, ProgramLowering &l) {
  Value logits = l.read(op, op.getLogits()), labels = l.stored(op.getLabels()),
        dloss = l.read(op, op.getGrad());
  auto instr = sched::CrossEntropyGradOp::create(
      l.builder(), op.getLoc(), logits, labels, dloss,
      l.write(op, op.getResult()), op.getIgnoreIndexAttr(), vocabAxes(op),
      Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

template <typename OpTy>
LogicalResult lowerReduce(OpTy op, ProgramLowering &l, sched::Reduction kind) {
  Value x = l.read(op, op.getInput());
  auto instr = sched::ReduceOp::create(
      l.builder(), op.getLoc(), x, l.write(op, op.getResult()),
      sched::ReductionAttr::get(l.context(), kind), op.getDimsAttr(), Value(),
      compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerReduceSum(ReduceSumOp op, ProgramLowering &l) {
  return lowerReduce(op, l, sched::Reduction::sum);
}
LogicalResult lowerReduceMean(ReduceMeanOp op, ProgramLowering &l) {
  return lowerReduce(op, l, sched::Reduction::mean);
}
LogicalResult lowerReduceMax(ReduceMaxOp op, ProgramLowering &l) {
  return lowerReduce(op, l, sched::Reduction::max);
}

LogicalResult lowerSoftmax(SoftmaxOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput());
  sched::SoftmaxOp::create(l.builder(), op.getLoc(), x,
                           l.write(op, op.getResult()), op.getDimAttr(),
                           compute(l));
  return success();
}

LogicalResult lowerDropout(DropoutOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput());
  Value step = op.getStep() ? l.read(op, op.getStep()) : Value();
  Value microbatch =
      op.getMicrobatch() ? l.read(op, op.getMicrobatch()) : Value();
  Value positions = op.getPositions() ? l.stored(op.getPositions()) : Value();
  sched::DropoutOp::create(
      l.builder(), op.getLoc(), x, l.write(op, op.getResult()), step,
      microbatch, positions, op.getRateAttr(), op.getSeedAttr(),
      op.getSplitAttr(), op.getMicrobatchesAttr(), compute(l));
  return success();
}

LogicalResult lowerFp8Amax(Fp8AmaxOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput());
  sched::Fp8AmaxOp::create(l.builder(), op.getLoc(), x,
                           l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerFp8Quantize(Fp8QuantizeOp op, ProgramLowering &l) {
  // Codes only, where gathers move them and decode them on arrival.
  if (l.fp8Encoded(op)) {
    l.fp8Codes(op) = lowerFp8Encode(op, l);
    return success();
  }
  // FP8 codes for the GEMMs; the values too where others read them.
  if (Fp8Plan *plan = l.fp8Plan(op)) {
    if (failed(lowerFp8Cast(op, *plan, l)))
      return failure();
    if (!plan->keepValues)
      return success();
  }
  if (lowerFp8StateValues(op, l))
    return success();
  Value x = l.read(op, op.getInput(), /*f32=*/true),
        amax = l.read(op, op.getAmax());
  OpBuilder &b = l.builder();
  sched::Fp8QuantizeOp::create(
      b, op.getLoc(), x, amax, l.write(op, op.getResult()),
      b.getStringAttr(isa<Float8E4M3FNType>(op.getFormat()) ? "f8e4m3fn"
                                                            : "f8e5m2"),
      op.getPow2ScalesAttr(), compute(l));
  return success();
}

LogicalResult lowerFp8GroupQuantize(Fp8GroupQuantizeOp op, ProgramLowering &l) {
  if (lowerFp8GroupCast(op, l))
    return success();
  Value x = l.read(op, op.getInput(), /*f32=*/true);
  OpBuilder &b = l.builder();
  sched::Fp8GroupQuantizeOp::create(
      b, op.getLoc(), x, l.stored(op.getSizes()), l.write(op, op.getResult()),
      b.getStringAttr(isa<Float8E4M3FNType>(op.getFormat()) ? "f8e4m3fn"
                                                            : "f8e5m2"),
      b.getI64IntegerAttr(op.getRows()), b.getI64IntegerAttr(op.getExperts()),
      op.getPow2ScalesAttr(), compute(l));
  return success();
}

LogicalResult lowerLayerNormGrad(LayerNormGradOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput()), w = l.read(op, op.getWeight()),
        dy = l.read(op, op.getGrad());
  Value dx = l.write(op, op.getInputGrad()),
        dw = l.write(op, op.getWeightGrad()),
        db = l.write(op, op.getBiasGrad());
  auto instr = sched::LayerNormGradOp::create(
      l.builder(), op.getLoc(), x, w, dy, dx, dw, db, op.getEpsilonAttr(),
      Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerRMSNormGrad(RMSNormGradOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput()), w = l.read(op, op.getWeight()),
        dy = l.read(op, op.getGrad());
  Value dx = l.write(op, op.getInputGrad()),
        dw = l.write(op, op.getWeightGrad());
  auto instr =
      sched::RMSNormGradOp::create(l.builder(), op.getLoc(), x, w, dy, dx, dw,
                                   op.getEpsilonAttr(), Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerOneHot(OneHotOp op, ProgramLowering &l) {
  sched::OneHotOp::create(l.builder(), op.getLoc(), l.stored(op.getIndices()),
                          l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerTopK(TopKOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput());
  Value values = l.write(op, op.getValues()),
        indices = l.write(op, op.getIndices());
  sched::TopKOp::create(l.builder(), op.getLoc(), x, values, indices,
                        op.getKAttr(), compute(l));
  return success();
}

LogicalResult lowerTopKGating(TopKGatingOp op, ProgramLowering &l) {
  Value logits = l.read(op, op.getLogits());
  Value weights = l.write(op, op.getWeights()),
        indices = l.write(op, op.getIndices());
  sched::TopKGatingOp::create(l.builder(), op.getLoc(), logits, weights,
                              indices, op.getKAttr(),
                              boolAttr(l, op.getNormalize()), compute(l));
  return success();
}

LogicalResult lowerExpertRoute(ExpertRouteOp op, ProgramLowering &l) {
  OpBuilder &b = l.builder();
  auto axes = op->getAttrOfType<ArrayAttr>(kTokenAxesAttr);
  auto instr = sched::ExpertRouteOp::create(
      b, op.getLoc(), l.stored(op.getIndices()), l.write(op, op.getPositions()),
      l.write(op, op.getCounts()),
      b.getI64IntegerAttr(op.getCapacity() ? *op.getCapacity() : 0),
      axes ? axes : b.getArrayAttr({}), Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerExpertDispatch(ExpertDispatchOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput()), pos = l.stored(op.getPositions());
  sched::ExpertDispatchOp::create(l.builder(), op.getLoc(), x, pos,
                                  l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerExpertCombine(ExpertCombineOp op, ProgramLowering &l) {
  Value rows = l.read(op, op.getExpertOutputs()),
        weights = l.read(op, op.getWeights()),
        pos = l.stored(op.getPositions());
  sched::ExpertCombineOp::create(l.builder(), op.getLoc(), rows, weights, pos,
                                 l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerExpertGather(ExpertGatherOp op, ProgramLowering &l) {
  Value rows = l.read(op, op.getExpertOutputs()),
        pos = l.stored(op.getPositions());
  sched::ExpertGatherOp::create(l.builder(), op.getLoc(), rows, pos,
                                l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerExpertScatter(ExpertScatterOp op, ProgramLowering &l) {
  Value pairs = l.read(op, op.getPairs()), pos = l.stored(op.getPositions());
  sched::ExpertScatterOp::create(l.builder(), op.getLoc(), pairs, pos,
                                 l.write(op, op.getResult()), compute(l));
  return success();
}

LogicalResult lowerGroupedMatmul(GroupedMatmulOp op, ProgramLowering &l) {
  // Operands kept as FP8 codes (Fp8Storage.cpp) come k-contiguous: the
  // input [N, K] and the weight [E, M, K] (transposed per expert where the
  // op reads [E, K, M]), each with its scales.
  bool t = op.getTransposeRhs();
  auto fp8 = fp8OperandPair(op, l, op.getInput(), false, op.getWeight(), !t);
  if (failed(fp8))
    return failure();
  auto [fx, fw] = *fp8;
  Value x, w, scaleX, scaleW;
  ArrayAttr scaleModes;
  OpBuilder &b = l.builder();
  if (fx) {
    x = fx->codes, scaleX = fx->scaleInv;
    w = fw->codes, scaleW = fw->scaleInv;
    t = true;
    scaleModes = fp8ScaleModes(b, *fx, *fw);
  } else {
    x = l.read(op, op.getInput()), w = l.read(op, op.getWeight());
  }
  sched::GroupedMatmulOp::create(b, op.getLoc(), x, w, l.stored(op.getSizes()),
                                 l.write(op, op.getResult()), scaleX, scaleW,
                                 boolAttr(l, t), scaleModes, compute(l));
  return success();
}

LogicalResult lowerGroupedMatmulWgrad(GroupedMatmulWgradOp op,
                                      ProgramLowering &l) {
  // Operands kept as FP8 codes (lowerFp8GroupCast) come transposed, each
  // expert's rows contiguous, with scales per tile of an expert's rows.
  Value sizes = l.stored(op.getSizes());
  const Fp8Operand *fa = l.fp8Operand(op.getLhs(), /*transposed=*/true),
                   *fr = l.fp8Operand(op.getRhs(), /*transposed=*/true);
  OpBuilder &b = l.builder();
  if (fa && fr) {
    auto q = op.getLhs().getDefiningOp<Fp8GroupQuantizeOp>();
    sched::GroupedMatmulWgradOp::create(
        b, op.getLoc(), fa->codes, fr->codes, sizes,
        l.write(op, op.getResult()), fa->scaleInv, fr->scaleInv,
        b.getI64IntegerAttr(q.getRows()), compute(l));
    return success();
  }
  if (fa || fr)
    return op.emitOpError("has one operand as FP8 codes and one not");
  Value a = l.read(op, op.getLhs()), r = l.read(op, op.getRhs());
  sched::GroupedMatmulWgradOp::create(b, op.getLoc(), a, r, sizes,
                                      l.write(op, op.getResult()), Value(),
                                      Value(), IntegerAttr(), compute(l));
  return success();
}

} // namespace

void populateLibraryLowerings(LoweringTable &table) {
  addLowering(table, lowerEmbedding);
  addLowering(table, lowerEmbeddingGrad);
  addLowering(table, lowerRope);
  addLowering(table, lowerCrossEntropy);
  addLowering(table, lowerCrossEntropyGrad);
  addLowering(table, lowerReduceSum);
  addLowering(table, lowerReduceMean);
  addLowering(table, lowerReduceMax);
  addLowering(table, lowerSoftmax);
  addLowering(table, lowerDropout);
  addLowering(table, lowerFp8Amax);
  addLowering(table, lowerFp8Quantize);
  addLowering(table, lowerFp8GroupQuantize);
  addLowering(table, lowerLayerNormGrad);
  addLowering(table, lowerRMSNormGrad);
  addLowering(table, lowerOneHot);
  addLowering(table, lowerTopK);
  addLowering(table, lowerTopKGating);
  addLowering(table, lowerExpertRoute);
  addLowering(table, lowerExpertDispatch);
  addLowering(table, lowerExpertCombine);
  addLowering(table, lowerExpertGather);
  addLowering(table, lowerExpertScatter);
  addLowering(table, lowerGroupedMatmul);
  addLowering(table, lowerGroupedMatmulWgrad);
}

} // namespace weft::codegen

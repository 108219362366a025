//===- Library.cpp - weft ops the runtime has its own kernels for --------===//
//
// Embedding, RoPE, cross-entropy, reductions, softmax, dropout, norm
// gradients and MoE routing each become the sched instruction of the same
// name, every attribute spelled (the runtime has no defaults), operands
// read and results written in the type the target's kernel computes in
// (ProgramLowering::read / write), and a vocabulary-parallel op's
// `weft.vocab_axes` carried as the instruction's group. On the GPU,
// reductions, norm gradients, cross-entropy and the expert ops are several
// kernels: for the cuda target each gets the scratch its shapes need
// (dialects/sched/IR/ScratchLayout.h), which the memory plan places; the
// CPU's kernels need none.
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
  sched::RopeOp::create(l.builder(), op.getLoc(), x,
                        l.write(op, op.getResult()), op.getThetaAttr(),
                        op.getPositionOffsetAttr(),
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
  sched::DropoutOp::create(l.builder(), op.getLoc(), x,
                           l.write(op, op.getResult()), op.getRateAttr(),
                           op.getSeedAttr(), compute(l));
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

LogicalResult lowerExpertDispatch(ExpertDispatchOp op, ProgramLowering &l) {
  Value x = l.read(op, op.getInput()), ids = l.stored(op.getIndices());
  auto instr = sched::ExpertDispatchOp::create(
      l.builder(), op.getLoc(), x, ids, l.write(op, op.getResult()),
      op.getNumExpertsAttr(), op.getCapacityAttr(), Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerExpertCombine(ExpertCombineOp op, ProgramLowering &l) {
  Value slots = l.read(op, op.getExpertOutputs()),
        weights = l.read(op, op.getWeights()), ids = l.stored(op.getIndices());
  auto instr = sched::ExpertCombineOp::create(
      l.builder(), op.getLoc(), slots, weights, ids,
      l.write(op, op.getResult()), Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerExpertGather(ExpertGatherOp op, ProgramLowering &l) {
  Value slots = l.read(op, op.getExpertOutputs()),
        ids = l.stored(op.getIndices());
  auto instr = sched::ExpertGatherOp::create(l.builder(), op.getLoc(), slots,
                                             ids, l.write(op, op.getResult()),
                                             Value(), compute(l));
  return l.addGpuScratch(op, instr);
}

LogicalResult lowerExpertScatter(ExpertScatterOp op, ProgramLowering &l) {
  Value pairs = l.read(op, op.getPairs()), ids = l.stored(op.getIndices());
  auto instr = sched::ExpertScatterOp::create(
      l.builder(), op.getLoc(), pairs, ids, l.write(op, op.getResult()),
      op.getNumExpertsAttr(), op.getCapacityAttr(), Value(), compute(l));
  return l.addGpuScratch(op, instr);
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
  addLowering(table, lowerLayerNormGrad);
  addLowering(table, lowerRMSNormGrad);
  addLowering(table, lowerOneHot);
  addLowering(table, lowerTopK);
  addLowering(table, lowerTopKGating);
  addLowering(table, lowerExpertDispatch);
  addLowering(table, lowerExpertCombine);
  addLowering(table, lowerExpertGather);
  addLowering(table, lowerExpertScatter);
}

} // namespace weft::codegen

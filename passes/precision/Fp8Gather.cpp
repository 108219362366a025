//===- Fp8Gather.cpp - gather per-tensor FP8 values after quantizing ------===//
//
// Partitioning gathers a split tensor whole where a per-tensor FP8 scale
// spans the split (a ZeRO-3 weight, a tensor-parallel weight, a
// sequence-parallel activation), and quantizes the gathered tensor. With
// one scale for the whole tensor the quantization is elementwise, so it
// may run on each shard first, with the maximum max all-reduced over the
// gather's axes: the gathered values are the same to the bit, and what
// moves is the quantized tensor, which FP8 storage moves as one byte an
// element (torchao's float8 all-gather for FSDP2 does the same).
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FP8GATHER
#include "passes/precision/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
bool perTensor(Value amax) {
  return cast<ShapedType>(amax.getType()).getNumElements() == 1;
}

/// Whether every reader of `gather` is a per-tensor maximum or a
/// per-tensor quantization of it (at least one quantization).
bool quantizedOnly(AllGatherOp gather) {
  bool quantized = false;
  for (OpOperand &use : gather.getResult().getUses()) {
    Operation *user = use.getOwner();
    if (auto amax = dyn_cast<Fp8AmaxOp>(user)) {
      if (!perTensor(amax.getResult()))
        return false;
    } else if (auto q = dyn_cast<Fp8QuantizeOp>(user)) {
      if (use.getOperandNumber() != 0 || !perTensor(q.getAmax()))
        return false;
      quantized = true;
    } else {
      return false;
    }
  }
  return quantized;
}

void moveAfterQuantization(AllGatherOp gather) {
  Value shard = gather.getInput();
  // The maxima first: a quantization may read one of them.
  for (Operation *user : llvm::to_vector(gather.getResult().getUsers())) {
    auto amax = dyn_cast<Fp8AmaxOp>(user);
    if (!amax)
      continue;
    OpBuilder b(amax);
    auto local = Fp8AmaxOp::create(b, amax.getLoc(), amax.getType(), shard);
    // Delayed scaling's history name stays on the maximum; the recorder
    // reads it after this all-reduce.
    local->setAttrs(amax->getAttrs());
    Value whole = AllReduceOp::create(
                      b, amax.getLoc(),
                      ReduceKindAttr::get(b.getContext(), ReduceKind::Max),
                      ValueRange{local.getResult()}, gather.getMeshAttr(),
                      gather.getAxesAttr())
                      .getResult(0);
    amax.getResult().replaceAllUsesWith(whole);
    amax.erase();
  }
  for (Operation *user : llvm::to_vector(gather.getResult().getUsers())) {
    auto q = cast<Fp8QuantizeOp>(user);
    OpBuilder b(q);
    auto local = Fp8QuantizeOp::create(
        b, q.getLoc(), shard.getType(), shard, q.getAmax(), q.getFormatAttr(),
        q.getPow2ScalesAttr(), /*backward_block=*/nullptr,
        /*group_rows=*/nullptr); // Per-tensor.
    for (NamedAttribute a : q->getDiscardableAttrs())
      local->setAttr(a.getName(), a.getValue());
    auto whole = AllGatherOp::create(b, gather.getLoc(), q.getType(),
                                     local.getResult(), gather.getMeshAttr(),
                                     gather.getAxesAttr(), gather.getDimAttr());
    for (NamedAttribute a : gather->getDiscardableAttrs())
      whole->setAttr(a.getName(), a.getValue());
    q.getResult().replaceAllUsesWith(whole.getResult());
    q.erase();
  }
  gather.erase();
}

/// Whether `gather` gathers a parameter (through a cast).
bool gathersParam(AllGatherOp gather) {
  Value v = gather.getInput();
  if (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v.getDefiningOp<ParamOp>() != nullptr;
}

struct Fp8GatherPass : weft::impl::Fp8GatherBase<Fp8GatherPass> {
  using Fp8GatherBase::Fp8GatherBase;
  void runOnOperation() override {
    SmallVector<AllGatherOp> gathers;
    getOperation().walk([&](AllGatherOp g) {
      if (quantizedOnly(g) && (params || !gathersParam(g)))
        gathers.push_back(g);
    });
    for (AllGatherOp g : gathers)
      moveAfterQuantization(g);
  }
};
} // namespace

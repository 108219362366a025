//===- ReshardAfterForward.cpp - re-gather ZeRO-3 parameters for backward -===//

#include "passes/sharding/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace weft {
#define GEN_PASS_DEF_RESHARDAFTERFORWARD
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

int64_t weft::reshardAfterForward(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The loss is the first result; what runs after its definition is the
  // backward (and the optimizer, which reads no gathered parameter).
  Operation *boundary =
      ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (!boundary)
    return 0;
  int64_t count = 0;
  for (AllGatherOp gather : llvm::to_vector(body.getOps<AllGatherOp>())) {
    // A stored block of a parameter (or of its compute-type cast, or that
    // quantized to FP8: weft-fp8-gather quantizes a shard, or a view of it
    // such as GPT-2's c_attn's q, k or v slice, before its gather, and the
    // backward gathers the quantized shard again).
    Value stored = gather.getInput();
    if (auto q = stored.getDefiningOp<Fp8QuantizeOp>()) {
      stored = q.getInput();
      while (isa_and_nonnull<SliceOp, ReshapeOp>(stored.getDefiningOp()))
        stored = stored.getDefiningOp()->getOperand(0);
    }
    if (auto castOp = stored.getDefiningOp<CastOp>())
      stored = castOp.getInput();
    if (!stored.getDefiningOp<ParamOp>() || !gather->isBeforeInBlock(boundary))
      continue;
    // The late uses by the pipeline stage that runs them (none without
    // pp): each stage gathers its own copy, since a gathered value cannot
    // go back to the parameter's stage in the backward (a tied embedding's
    // head on the last stage). The split passes the stored block forward.
    // A late use may read the gathered value through forward views of it
    // (GPT-2's c_attn as q, k and v slices) or its FP8 quantization: those
    // are made again from the new gather, so no gathered copy lives across
    // the two.
    struct Late {
      OpOperand *use;
      SmallVector<Operation *, 2> views; // From the gather to the use.
    };
    llvm::MapVector<Attribute, std::pair<SmallVector<Late>, Operation *>> late;
    SmallVector<std::pair<Value, SmallVector<Operation *, 2>>> work = {
        {gather.getResult(), {}}};
    while (!work.empty()) {
      auto [value, views] = work.pop_back_val();
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        if (user == ret)
          continue;
        if (!boundary->isBeforeInBlock(user)) {
          if (isa<SliceOp, ReshapeOp>(user)) {
            SmallVector<Operation *, 2> longer = views;
            longer.push_back(user);
            work.push_back({user->getResult(0), std::move(longer)});
          }
          // An FP8 quantization of the gathered value by its own maxima
          // (a block-scaled weight the backward reads as the forward
          // quantized it) is made again too, maxima first.
          auto q = dyn_cast<Fp8QuantizeOp>(user);
          auto amax = q ? q.getAmax().getDefiningOp<Fp8AmaxOp>() : nullptr;
          if (q && use.getOperandNumber() == 0 && amax &&
              amax.getInput() == value) {
            SmallVector<Operation *, 2> longer = views;
            longer.push_back(amax);
            longer.push_back(q);
            work.push_back({q.getResult(), std::move(longer)});
          }
          continue;
        }
        auto &[uses, first] = late[user->getAttr(kStageAttr)];
        uses.push_back({&use, views});
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
    }
    for (auto &[stage, usesAndFirst] : late) {
      auto &[uses, first] = usesAndFirst;
      OpBuilder b(first);
      Operation *again = b.clone(*gather);
      if (stage)
        again->setAttr(kStageAttr, stage);
      // Each view chain once, from the new gather.
      IRMapping map;
      map.map(gather.getResult(), again->getResult(0));
      for (Late &l : uses) {
        for (Operation *view : l.views)
          if (!map.contains(view->getResult(0))) {
            Operation *copy = b.clone(*view, map);
            if (stage)
              copy->setAttr(kStageAttr, stage);
          }
        l.use->set(map.lookup(l.use->get()));
      }
      ++count;
    }
  }
  return count;
}

namespace {
struct ReshardAfterForwardPass
    : weft::impl::ReshardAfterForwardBase<ReshardAfterForwardPass> {
  void runOnOperation() override { reshardAfterForward(getOperation()); }
};
} // namespace

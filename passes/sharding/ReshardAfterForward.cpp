//===- ReshardAfterForward.cpp - re-gather ZeRO-3 parameters for backward -===//

#include "passes/sharding/Passes.h"

#include "mlir/IR/Builders.h"
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
    // A stored block of a parameter (or of its compute-type cast).
    Value stored = gather.getInput();
    if (auto castOp = stored.getDefiningOp<CastOp>())
      stored = castOp.getInput();
    if (!stored.getDefiningOp<ParamOp>() || !gather->isBeforeInBlock(boundary))
      continue;
    // The late uses by the pipeline stage that runs them (none without
    // pp): each stage gathers its own copy, since a gathered value cannot
    // go back to the parameter's stage in the backward (a tied embedding's
    // head on the last stage). The split passes the stored block forward.
    llvm::MapVector<Attribute, std::pair<SmallVector<OpOperand *>, Operation *>>
        late;
    for (OpOperand &use : gather.getResult().getUses()) {
      Operation *user = use.getOwner();
      if (user == ret || !boundary->isBeforeInBlock(user))
        continue;
      auto &[uses, first] = late[user->getAttr(kStageAttr)];
      uses.push_back(&use);
      if (!first || user->isBeforeInBlock(first))
        first = user;
    }
    for (auto &[stage, usesAndFirst] : late) {
      auto &[uses, first] = usesAndFirst;
      OpBuilder b(first);
      Operation *again = b.clone(*gather);
      if (stage)
        again->setAttr(kStageAttr, stage);
      for (OpOperand *use : uses)
        use->set(again->getResult(0));
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

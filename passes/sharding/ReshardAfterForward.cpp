//===- ReshardAfterForward.cpp - re-gather ZeRO-3 parameters for backward -===//

#include "passes/sharding/Passes.h"

#include "mlir/IR/Builders.h"

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
    SmallVector<OpOperand *> late;
    Operation *first = nullptr;
    for (OpOperand &use : gather.getResult().getUses()) {
      Operation *user = use.getOwner();
      if (user == ret || !boundary->isBeforeInBlock(user))
        continue;
      late.push_back(&use);
      if (!first || user->isBeforeInBlock(first))
        first = user;
    }
    if (late.empty())
      continue;
    OpBuilder b(first);
    Operation *again = b.clone(*gather);
    for (OpOperand *use : late)
      use->set(again->getResult(0));
    ++count;
  }
  return count;
}

namespace {
struct ReshardAfterForwardPass
    : weft::impl::ReshardAfterForwardBase<ReshardAfterForwardPass> {
  void runOnOperation() override { reshardAfterForward(getOperation()); }
};
} // namespace

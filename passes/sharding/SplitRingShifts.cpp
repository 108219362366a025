//===- SplitRingShifts.cpp - ring shifts as sends and receives ------------===//

#include "passes/sharding/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_SPLITRINGSHIFTS
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

/// Tags of ring shifts start here, clear of the pipeline's (one per
/// transfer of a step, far fewer).
static constexpr int64_t kRingTagBase = int64_t(1) << 20;

void weft::splitRingShifts(func::FuncOp func) {
  OpBuilder b(func.getContext());
  int64_t tag = kRingTagBase;
  for (RingShiftOp shift :
       llvm::to_vector(func.getBody().front().getOps<RingShiftOp>())) {
    Location loc = shift.getLoc();
    // The send goes as soon as its value exists: in the backward, autodiff
    // emits a key/value gradient's shift after the next block's gradient,
    // which the transfer should overlap instead. Sends of one value keep
    // their order.
    Value input = shift.getInput();
    if (Operation *def = input.getDefiningOp()) {
      Operation *after = def;
      while (auto next = dyn_cast_or_null<SendOp>(after->getNextNode()))
        after = next;
      b.setInsertionPointAfter(after);
    } else {
      b.setInsertionPointToStart(shift->getBlock());
    }
    SendOp::create(b, loc, input, shift.getMeshAttr(), shift.getAxisAttr(),
                   shift.getOffsetAttr(), b.getI64IntegerAttr(tag));
    // The receive waits for the data: as late as the first reader allows.
    Operation *first = nullptr;
    for (Operation *user : shift.getResult().getUsers()) {
      Operation *inBlock = shift->getBlock()->findAncestorOpInBlock(*user);
      if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
        first = inBlock;
    }
    if (first)
      b.setInsertionPoint(first);
    auto recv = RecvOp::create(
        b, loc, shift.getType(), shift.getMeshAttr(), shift.getAxisAttr(),
        b.getI64IntegerAttr(-shift.getOffset()), b.getI64IntegerAttr(tag++));
    shift.getResult().replaceAllUsesWith(recv.getResult());
    shift.erase();
  }
}

namespace {
struct SplitRingShiftsPass
    : weft::impl::SplitRingShiftsBase<SplitRingShiftsPass> {
  void runOnOperation() override { splitRingShifts(getOperation()); }
};
} // namespace

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
    b.setInsertionPoint(shift);
    SendOp::create(b, loc, shift.getInput(), shift.getMeshAttr(),
                   shift.getAxisAttr(), shift.getOffsetAttr(),
                   b.getI64IntegerAttr(tag));
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

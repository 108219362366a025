//===- Bucket.cpp - merge all-reduces into buckets ------------------------===//

#include "passes/sharding/Passes.h"

#include "passes/memory/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_BUCKETALLREDUCE
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
int64_t bytesOf(AllReduceOp op) {
  int64_t bytes = 0;
  for (Value v : op.getInputs()) {
    auto type = cast<RankedTensorType>(v.getType());
    bytes += type.getNumElements() * elementBytes(type.getElementType());
  }
  return bytes;
}

bool sameGroup(AllReduceOp a, AllReduceOp b) {
  return a.getMesh() == b.getMesh() && a.getAxes() == b.getAxes() &&
         a.getReduction() == b.getReduction();
}

/// Replaces `members` by one all-reduce where the last member was.
void merge(ArrayRef<AllReduceOp> members) {
  AllReduceOp last = members.back();
  OpBuilder b(last);
  SmallVector<Value> inputs;
  for (AllReduceOp op : members)
    inputs.append(op.getInputs().begin(), op.getInputs().end());
  // Named for what it is: located at its last member alone, it would be
  // that member's layer (the runtime's messages and traces quote it).
  Location loc = members.size() > 1
                     ? Location(NameLoc::get(
                           b.getStringAttr("all-reduce bucket"), last.getLoc()))
                     : last.getLoc();
  auto merged = AllReduceOp::create(b, loc, last.getReductionAttr(), inputs,
                                    last.getMeshAttr(), last.getAxesAttr());
  unsigned next = 0;
  for (AllReduceOp op : members) {
    for (Value r : op.getResults())
      r.replaceAllUsesWith(merged.getResult(next++));
    op.erase();
  }
}
} // namespace

int64_t weft::bucketAllReduces(func::FuncOp func, int64_t bucketBytes) {
  SmallVector<AllReduceOp> all(func.getBody().front().getOps<AllReduceOp>());
  SmallVector<SmallVector<AllReduceOp>> buckets;
  int64_t bytes = 0;
  for (AllReduceOp op : all) {
    bool joins = !buckets.empty() && sameGroup(buckets.back().front(), op) &&
                 bytes + bytesOf(op) <= bucketBytes;
    // Every use of the bucket so far must come after `op`, where the merged
    // collective will run.
    if (joins)
      for (AllReduceOp member : buckets.back())
        for (Operation *user : member->getUsers())
          joins &= op->isBeforeInBlock(user);
    if (!joins) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(op);
    bytes += bytesOf(op);
  }
  for (ArrayRef<AllReduceOp> bucket : buckets)
    if (bucket.size() > 1)
      merge(bucket);
  return static_cast<int64_t>(buckets.size());
}

namespace {
struct BucketAllReducePass
    : weft::impl::BucketAllReduceBase<BucketAllReducePass> {
  using BucketAllReduceBase::BucketAllReduceBase;
  void runOnOperation() override {
    bucketAllReduces(getOperation(),
                     static_cast<int64_t>(bucketMb * 1024 * 1024));
  }
};
} // namespace

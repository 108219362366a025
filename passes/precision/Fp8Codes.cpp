//===- Fp8Codes.cpp - FP8 quantizations kept as codes ---------------------===//

#include "passes/precision/Fp8Codes.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace weft {

bool gathersFp8Codes(Fp8QuantizeOp q) {
  return !q.getResult().use_empty() && q.getType().getNumElements() % 4 == 0 &&
         llvm::all_of(q->getUsers(),
                      [](Operation *user) { return isa<AllGatherOp>(user); });
}

bool sameOnEveryRank(Value v, ArrayAttr axes,
                     llvm::SmallPtrSetImpl<Value> &seen, int depth) {
  if (depth == 0)
    return false;
  if (!seen.insert(v).second)
    return true;
  // A fused region's argument is the fused op's operand.
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fused = dyn_cast_or_null<FusedOp>(arg.getOwner()->getParentOp());
    return fused && sameOnEveryRank(fused->getOperand(arg.getArgNumber()), axes,
                                    seen, depth - 1);
  }
  Operation *def = v.getDefiningOp();
  if (auto fused = dyn_cast<FusedOp>(def))
    return sameOnEveryRank(fused.getBody().front().getTerminator()->getOperand(
                               cast<OpResult>(v).getResultNumber()),
                           axes, seen, depth - 1);
  if (auto reduce = dyn_cast<AllReduceOp>(def))
    return reduce.getReduction() == ReduceKind::Max &&
           llvm::all_of(axes, [&](Attribute axis) {
             return llvm::is_contained(reduce.getAxes(), axis);
           });
  if (auto param = dyn_cast<ParamOp>(def))
    return !param->hasAttr(kShardOfAttr);
  if (isa<ConstantOp>(def))
    return true;
  bool alike =
      (def->hasTrait<OpTrait::Elementwise>() && !isa<DropoutOp>(def)) ||
      isa<ReshapeOp, BroadcastOp, ReduceMaxOp, CopyToGroupOp>(def);
  if (!alike || def->getNumOperands() == 0)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return sameOnEveryRank(operand, axes, seen, depth - 1);
  });
}

Value decodingMaxima(AllGatherOp gather) {
  auto q = gather.getInput().getDefiningOp<Fp8QuantizeOp>();
  if (!q)
    return Value();
  uint64_t dim = gather.getDim();
  Value amax = q.getAmax();
  llvm::SmallPtrSet<Value, 8> seen;
  if (cast<ShapedType>(amax.getType()).getShape()[dim] == 1 &&
      sameOnEveryRank(amax, gather.getAxes(), seen))
    return amax;
  for (Operation *user : amax.getUsers()) {
    auto g = dyn_cast<AllGatherOp>(user);
    if (g && g.getDim() == dim && g.getAxes() == gather.getAxes() &&
        g->getBlock() == gather->getBlock() && g->isBeforeInBlock(gather))
      return g.getResult();
  }
  return Value();
}

llvm::StringMap<Type> fp8CodeStates(ModuleOp module) {
  llvm::StringMap<SmallVector<AssignOp, 1>> assigns;
  llvm::StringMap<SmallVector<ParamOp>> reads;
  module.walk([&](Operation *op) {
    if (auto assign = dyn_cast<AssignOp>(op))
      assigns[assign.getName()].push_back(assign);
    else if (auto param = dyn_cast<ParamOp>(op))
      reads[param.getName()].push_back(param);
  });
  // The one assign of `name`, if it has one.
  auto onlyAssign = [&](StringRef name) {
    auto it = assigns.find(name);
    return it != assigns.end() && it->second.size() == 1 ? it->second.front()
                                                         : AssignOp();
  };
  llvm::StringMap<Type> states;
  for (auto &[name, list] : assigns) {
    AssignOp assign = onlyAssign(name);
    auto gather =
        assign ? assign.getValue().getDefiningOp<AllGatherOp>() : AllGatherOp();
    if (!gather || !gather.getResult().hasOneUse())
      continue;
    auto q = gather.getInput().getDefiningOp<Fp8QuantizeOp>();
    if (!q || !gathersFp8Codes(q))
      continue;
    // The maxima the codes decode by, assigned once to their state.
    Value maxima = decodingMaxima(gather);
    if (!maxima)
      continue;
    AssignOp maximaAssign;
    for (Operation *user : maxima.getUsers())
      if (auto a = dyn_cast<AssignOp>(user); a && a == onlyAssign(a.getName()))
        maximaAssign = a;
    if (!maximaAssign)
      continue;
    // Read as transient state, by quantizations of these codes' format and
    // scales by those maxima as that state holds them.
    bool readBack = llvm::all_of(reads.lookup(name), [&](ParamOp p) {
      return p.getState() && p->hasAttr(kTransientAttr) &&
             llvm::all_of(p->getUsers(), [&](Operation *user) {
               auto r = dyn_cast<Fp8QuantizeOp>(user);
               auto m = r ? r.getAmax().getDefiningOp<ParamOp>() : ParamOp();
               return r && r.getInput() == p.getResult() &&
                      r.getFormat() == q.getFormat() &&
                      r.getPow2Scales() == q.getPow2Scales() && m &&
                      m.getName() == maximaAssign.getName();
             });
    });
    if (readBack)
      states[name] = q.getFormat();
  }
  return states;
}

} // namespace weft

//===- FuseElementwise.cpp - elementwise chains into weft.fused -----------===//

#include "passes/fusion/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/fusion/Passes.h.inc"
} // namespace weft

using namespace mlir;

namespace {
bool isSplatConstant(Value v) {
  auto c = v.getDefiningOp<weft::ConstantOp>();
  return c && c.getValue().isSplat();
}

/// Whether `op` computes in a narrow float type (bf16, f16).
bool isNarrow(Operation *op) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return type && isa<FloatType>(type.getElementType()) &&
         !type.getElementType().isF32() && !type.getElementType().isF64();
}

/// A broadcast of a 0-d f32 value (AdamW's step size and bias corrections,
/// a clipping scale): inside a group it is that one value read by every
/// element, where alone it would write a whole tensor for the next kernel
/// to read back.
bool isScalarBroadcast(Operation *op) {
  auto bc = dyn_cast<weft::BroadcastOp>(op);
  return bc && cast<RankedTensorType>(bc.getInput().getType()).getRank() == 0 &&
         bc.getType().getElementType().isF32() &&
         cast<RankedTensorType>(bc.getInput().getType())
             .getElementType()
             .isF32();
}

/// A cast of a bf16 or f16 value to f32 (exact): inside a group the kernel
/// reads the narrow value as stored, where alone it would write an f32 copy
/// twice its size for the next kernel (a bf16 model's gradients on their
/// way to the gradient norm and AdamW).
bool isWideningCast(Operation *op) {
  auto widen = dyn_cast<weft::CastOp>(op);
  if (!widen)
    return false;
  Type from =
      cast<RankedTensorType>(widen.getInput().getType()).getElementType();
  return widen.getType().getElementType().isF32() &&
         (from.isBF16() || from.isF16());
}

/// Elementwise weft ops over one shape: the ops a generated loop kernel
/// runs. Kernels hold f32 values, so only f32 ops group; with `singleOps`,
/// a narrow (mixed-precision) op becomes a kernel of its own, which the
/// runtime feeds widened copies and whose results it rounds, the same
/// rounding once per op as everywhere else.
bool fusible(Operation *op, bool singleOps) {
  if (!isa<weft::WeftDialect>(op->getDialect()) || op->getNumResults() != 1)
    return false;
  if (isScalarBroadcast(op) || isWideningCast(op))
    return true;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (!type.getElementType().isF32() && !(singleOps && isNarrow(op)))
    return false;
  // Norms over the last dimension run row by row inside a group; their [D]
  // weights come in as inputs.
  if (isa<weft::LayerNormOp, weft::RMSNormOp>(op))
    return op->getOperand(0).getType() == type;
  return op->hasTrait<OpTrait::Elementwise>() &&
         llvm::all_of(op->getOperands(),
                      [&](Value v) { return v.getType() == type; });
}

/// Ops without operands (parameters, constants) depend on nothing, so a
/// group may use them wherever they are declared; so does a parameter's
/// copy into a data-parallel region (copy_to_group: the identity in the
/// forward), or data parallelism would keep a norm's weight from the add
/// before it.
bool isLeaf(Value v) {
  Operation *def = v.getDefiningOp();
  return def && (def->getNumOperands() == 0 ||
                 (isa<weft::CopyToGroupOp>(def) && isLeaf(def->getOperand(0))));
}

/// Moves the leaf `v` (and what it is computed from) before `op` if it is
/// declared after it.
void hoistLeaf(Value v, Operation *op) {
  Operation *def = v.getDefiningOp();
  if (!op->isBeforeInBlock(def))
    return;
  for (Value operand : def->getOperands())
    hoistLeaf(operand, op);
  def->moveBefore(op);
}

struct Group {
  SmallVector<Operation *> ops;
  int64_t first = 0; // Position of the first op.
};
} // namespace

int64_t weft::fuseElementwise(func::FuncOp func, bool singleOps) {
  Block &body = func.getBody().front();
  // Two kinds of value read by several groups are cloned into each reader,
  // users outside groups sharing the original:
  //   - a widening cast: reading the narrow value again is cheaper than
  //     writing and reading an f32 copy;
  //   - an op computed from parameters and scalars alone (a gradient
  //     accumulator times 1/M): each reader recomputes it from what stays
  //     in memory anyway, where a shared result would be held between its
  //     readers. The optimizer's step reads each mean gradient for the
  //     global norm and again for the update, after every other norm:
  //     shared, every parameter's mean gradient is live at once (4 bytes a
  //     parameter of arena).
  auto fromLeaves = [&](Operation *op) {
    return fusible(op, singleOps) && !isNarrow(op) &&
           llvm::all_of(op->getOperands(), [](Value v) {
             Operation *def = v.getDefiningOp();
             return def &&
                    (isLeaf(v) || isSplatConstant(v) || isScalarBroadcast(def));
           });
  };
  SmallVector<Operation *> cloned;
  for (Operation &op : body)
    if (op.getNumResults() == 1 && !op.getResult(0).hasOneUse() &&
        (isWideningCast(&op) || fromLeaves(&op)))
      cloned.push_back(&op);
  for (Operation *op : cloned) {
    for (OpOperand &use :
         llvm::make_early_inc_range(op->getResult(0).getUses())) {
      Operation *user = use.getOwner();
      // Only readers in this block: a group's region sees no outer value.
      if (user->getBlock() != &body || !fusible(user, singleOps) ||
          isNarrow(user))
        continue;
      OpBuilder builder(user);
      use.set(builder.clone(*op)->getResult(0));
    }
    if (op->use_empty())
      op->erase();
  }
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;

  SmallVector<Group> groups;
  llvm::DenseMap<Operation *, unsigned> groupOf;
  // Whether every value that `members` read from outside them (besides
  // leaves and splats, which move freely) is defined before `first`: then
  // they can all run as one op placed at `first`.
  auto inputsPrecede = [&](ArrayRef<Operation *> members,
                           ArrayRef<unsigned> merged, int64_t first) {
    return llvm::all_of(members, [&](Operation *member) {
      return llvm::all_of(member->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        if (!def || isSplatConstant(v) || isLeaf(v))
          return true;
        auto g = groupOf.find(def);
        if (g != groupOf.end() && llvm::is_contained(merged, g->second))
          return true;
        return position[def] < first;
      });
    });
  };
  // The group `op` joins, if any: all of `candidates` merged into the
  // earliest-starting one when their inputs allow (a chain that forked and
  // meets again, as AdamW's moments do), else one of them alone; the
  // others then stay as they are.
  auto join = [&](Operation &op,
                  ArrayRef<unsigned> candidates) -> std::optional<unsigned> {
    if (candidates.empty())
      return std::nullopt;
    unsigned base = *llvm::min_element(candidates, [&](unsigned a, unsigned b) {
      return groups[a].first < groups[b].first;
    });
    Operation *self = &op;
    // Every group's members read from outside it only values defined before
    // its first op (joining keeps it so), so the base group needs no second
    // look: only the groups that would move up to its start. Checking the
    // base as well made a long chain, one candidate per op, quadratic.
    bool mergeable =
        inputsPrecede(self, candidates, groups[base].first) &&
        llvm::all_of(candidates, [&](unsigned g) {
          return g == base ||
                 inputsPrecede(groups[g].ops, candidates, groups[base].first);
        });
    if (mergeable) {
      if (candidates.size() == 1)
        return base;
      for (unsigned g : candidates) {
        if (g == base)
          continue;
        for (Operation *moved : groups[g].ops) {
          groups[base].ops.push_back(moved);
          groupOf[moved] = base;
        }
        groups[g].ops.clear();
      }
      // Cloned in this order into the body: keep the block's (topological).
      llvm::sort(groups[base].ops, [&](Operation *a, Operation *b) {
        return position[a] < position[b];
      });
      return base;
    }
    for (unsigned g : candidates)
      if (inputsPrecede(self, {g}, groups[g].first))
        return g;
    return std::nullopt;
  };
  for (Operation &op : body) {
    if (!fusible(&op, singleOps))
      continue;
    // A narrow op stays alone: no group of its own joins others or is
    // joined (it is not entered in groupOf).
    if (isNarrow(&op)) {
      groups.push_back(Group{{&op}, position[&op]});
      continue;
    }
    // The groups of this op's operands' producers, of its own type (a
    // scalar broadcast's operand comes from a 0-d group, not one to join).
    Type type = op.getResult(0).getType();
    llvm::SetVector<unsigned> candidates;
    for (Value operand : op.getOperands())
      if (Operation *producer = operand.getDefiningOp())
        if (auto it = groupOf.find(producer);
            it != groupOf.end() &&
            groups[it->second].ops.front()->getResult(0).getType() == type)
          candidates.insert(it->second);
    std::optional<unsigned> chosen = join(op, candidates.getArrayRef());
    if (!chosen) {
      chosen = groups.size();
      groups.push_back(Group{{}, position[&op]});
    }
    groups[*chosen].ops.push_back(&op);
    groupOf[&op] = *chosen;
  }

  int64_t made = 0;
  for (Group &group : groups) {
    if (group.ops.size() < (singleOps ? 1u : 2u))
      continue;
    llvm::SmallPtrSet<Operation *, 16> members(group.ops.begin(),
                                               group.ops.end());
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Value> splats;
    SmallVector<Value> outputs;
    for (Operation *op : group.ops) {
      for (Value v : op->getOperands()) {
        if (Operation *def = v.getDefiningOp(); def && members.contains(def))
          continue;
        (isSplatConstant(v) ? splats : inputs).insert(v);
      }
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          outputs.push_back(r);
    }
    if (outputs.empty()) // Nothing reads the group: leave it as it is.
      continue;
    // Leaf inputs declared after the group's first op move up to it.
    for (Value in : inputs)
      if (isLeaf(in))
        hoistLeaf(in, group.ops.front());
    OpBuilder builder(group.ops.front());
    auto fused =
        FusedOp::create(builder, group.ops.front()->getLoc(),
                        ValueRange(outputs).getTypes(), inputs.getArrayRef());
    Block *block = builder.createBlock(&fused.getBody());
    IRMapping mapping;
    for (Value in : inputs)
      mapping.map(in, block->addArgument(in.getType(), in.getLoc()));
    for (Value s : splats)
      mapping.map(s, builder.clone(*s.getDefiningOp())->getResult(0));
    for (Operation *op : group.ops)
      builder.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value out : outputs)
      yielded.push_back(mapping.lookup(out));
    YieldOp::create(builder, fused.getLoc(), yielded);
    for (auto [out, result] : llvm::zip(outputs, fused.getResults()))
      out.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !members.contains(use.getOwner());
      });
    for (Operation *op : llvm::reverse(group.ops))
      op->erase();
    for (Value s : splats) // Copied into the group; drop them if now unused.
      if (s.use_empty())
        s.getDefiningOp()->erase();
    ++made;
  }
  return made;
}

namespace {
struct FuseElementwisePass
    : weft::impl::FuseElementwiseBase<FuseElementwisePass> {
  using FuseElementwiseBase::FuseElementwiseBase;
  void runOnOperation() override {
    if (!getOperation().isExternal())
      weft::fuseElementwise(getOperation(), singleOps);
  }
};
} // namespace

//===- PartitionOptimizer.cpp - ZeRO-1/2 as a partitioning of the step ----===//
//
// ZeRO-1 and -2 (Rajbhandari et al.) keep a parameter replicated but its
// optimizer state split over the data-parallel ranks: each rank updates
// only its block and the new blocks are all-gathered into the parameter;
// ZeRO-2 also receives only its block of the gradient (a reduce-scatter
// instead of the all-reduce). weft-optimizer-adamw writes the update of
// whole tensors and knows no strategy. This pass states the strategy as
// shardings of the step's values, from the plan's `weft.optimizer_shard`
// (and `weft.grad_shard`) on each parameter:
//   - the Adam moments (`<name>.exp_avg`, `<name>.exp_avg_sq`) split as the
//     optimizer split says;
//   - the parameter replicated;
//   - the gradient (the value weft-optimizer-adamw tagged `weft.grad_of`)
//     split too for ZeRO-2, replicated for ZeRO-1;
// and lets weft-sharding-propagate and weft-partition (with no
// copy_to_group: the step is not differentiated) derive the rest: the
// update's ops run on blocks, the replicated gradient and parameter are
// sliced where the update reads them, a split gradient's all-reduce
// becomes a reduce-scatter (the gradient norm then sums blocks and
// all-reduces the sum), and the parameter's assign all-gathers the block.
//
// With micro-batches (weft-accumulate-gradients), ZeRO-2's gradient is
// the accumulators' mean: the accumulator is a block in @step, and each
// micro-batch of @accumulate adds only its block of the gradient (a
// reduce-scatter where the gradient was an all-reduce over the optimizer's
// axes, a slice of it otherwise), so no rank holds a whole gradient
// between micro-batches.
//
// A mixed-precision master stored split by weft-apply-plan (its
// `weft.shard_of` already holds the optimizer split) is a block from the
// start, and its gradient arrives reduce-scattered through the gather's
// gradient; under ZeRO-1, which keeps whole gradients, that reduce-scatter
// becomes an all-reduce and a slice.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/ShardingState.h"

#include "passes/pipeline/Names.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace weft {
#define GEN_PASS_DEF_PARTITIONOPTIMIZER
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

namespace {
/// A parameter's optimizer split: the dimension it splits and the axes.
struct OptimizerSplit {
  ShardingAttr sharding;
  int64_t dim = -1;
  Axes axes;
};

/// Reads `param`'s `weft.optimizer_shard`; an error naming the attribute
/// unless it splits one dimension over axes of its mesh that divide it.
FailureOr<std::optional<OptimizerSplit>> readSplit(ParamOp param) {
  auto sharding = param->getAttrOfType<ShardingAttr>(kOptimizerShardAttr);
  if (!sharding)
    return std::optional<OptimizerSplit>();
  auto error = [&]() {
    return param.emitError("weft-partition-optimizer: ")
           << kOptimizerShardAttr << " ";
  };
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(param, sharding.getMesh());
  if (!mesh)
    return error() << "names @" << sharding.getMesh().getValue()
                   << ", which is not a weft.mesh",
           failure();
  DimAxes dims = readDims(param.getResult(), sharding);
  if (dims.size() != static_cast<size_t>(param.getType().getRank()))
    return error() << "has " << dims.size() << " dimensions for a parameter of "
                   << param.getType().getRank(),
           failure();
  OptimizerSplit split;
  split.sharding = sharding;
  for (auto [d, axes] : llvm::enumerate(dims)) {
    if (axes.empty())
      continue;
    if (split.dim >= 0)
      return error() << "splits more than one dimension", failure();
    for (StringAttr axis : axes)
      if (mesh.axisSize(axis.getValue()) < 1)
        return error() << "splits over mesh axis '" << axis.getValue()
                       << "', which @" << mesh.getSymName() << " lacks",
               failure();
    split.dim = static_cast<int64_t>(d);
    split.axes = axes;
  }
  if (split.dim < 0)
    return std::optional<OptimizerSplit>();
  int64_t ranks = splitCount(mesh, split.axes);
  if (param.getType().getDimSize(split.dim) % ranks != 0)
    return error() << "splits dimension " << split.dim << " of "
                   << param.getType() << " into " << ranks
                   << " blocks, which do not divide it",
           failure();
  return std::optional<OptimizerSplit>(split);
}

/// Whether `param` is already stored as its block of `split` (a master
/// weight weft-partition split by `weft.zero_shard`).
bool storedSplit(ParamOp param, const OptimizerSplit &split) {
  auto held = param->getAttrOfType<ShardingAttr>(kShardOfAttr);
  if (!held)
    return false;
  return readDims(param.getResult(), held)[split.dim] == split.axes;
}

/// ZeRO-1 keeps whole gradients: a master's reduce-scattered gradient
/// (through a cast in mixed precision) is all-reduced and its block taken.
void keepWholeGradient(Value grad, const OptimizerSplit &split) {
  auto castOp = grad.getDefiningOp<CastOp>();
  auto scatter =
      (castOp ? castOp.getInput() : grad).getDefiningOp<ReduceScatterOp>();
  if (!scatter)
    return;
  OpBuilder b(scatter);
  auto sum = ReduceKindAttr::get(b.getContext(), ReduceKind::Sum);
  Value whole = AllReduceOp::create(
                    b, scatter.getLoc(), sum, ValueRange{scatter.getInput()},
                    scatter.getMeshAttr(), scatter.getAxesAttr())
                    .getResult(0);
  auto block = ShardSliceOp::create(
      b, scatter.getLoc(), scatter.getType(), whole, scatter.getMeshAttr(),
      scatter.getAxesAttr(), scatter.getDimAttr());
  block->setDiscardableAttrs(scatter->getDiscardableAttrDictionary());
  scatter.getResult().replaceAllUsesWith(block.getResult());
  scatter.erase();
}

/// The gradients weft-optimizer-adamw tagged, by parameter name; removes
/// the tags when `strip`.
llvm::StringMap<Value> taggedGradients(func::FuncOp step, bool strip) {
  llvm::StringMap<Value> grads;
  step.walk([&](Operation *op) {
    auto tags = op->getAttrOfType<ArrayAttr>(kGradOfAttr);
    if (!tags)
      return;
    for (auto [result, tag] : llvm::zip(op->getResults(), tags))
      if (auto name = dyn_cast<StringAttr>(tag); name && !name.empty())
        grads.try_emplace(name.getValue(), result);
    if (strip)
      op->removeAttr(kGradOfAttr);
  });
  return grads;
}

/// The elements of the gradient a rank holds for the memory report: where
/// it arrives, before a cast to the master's type and the slice ZeRO-1
/// takes of the whole one.
int64_t heldGradientElements(Value grad) {
  if (auto castOp = grad.getDefiningOp<CastOp>())
    grad = castOp.getInput();
  if (auto slice = grad.getDefiningOp<ShardSliceOp>())
    grad = slice.getInput();
  return cast<RankedTensorType>(grad.getType()).getNumElements();
}

/// ZeRO-2 with micro-batches: @accumulate's accumulator of `name`'s
/// gradient becomes its block `held` (see the file comment). None there (a
/// step without micro-batches) is nothing to do.
LogicalResult accumulateBlocks(func::FuncOp accumulate, StringRef name,
                               const OptimizerSplit &split, ShardingAttr held) {
  std::string accName = (name + kGradAccumulatorSuffix).str();
  ParamOp acc;
  AssignOp assign;
  for (Operation &op : accumulate.getBody().front()) {
    if (auto p = dyn_cast<ParamOp>(op); p && p.getName() == accName)
      acc = p;
    if (auto a = dyn_cast<AssignOp>(op); a && a.getName() == accName)
      assign = a;
  }
  if (!acc)
    return success();
  auto add = assign ? assign.getValue().getDefiningOp<AddOp>() : AddOp();
  if (!add || add.getLhs() != acc.getResult())
    return acc.emitError("weft-partition-optimizer: accumulator '")
           << accName << "' is not assigned itself plus a gradient in @"
           << accumulate.getSymName()
           << " (run weft-accumulate-gradients first)";
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      accumulate, split.sharding.getMesh());
  auto type = cast<RankedTensorType>(acc.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[split.dim] /= splitCount(mesh, split.axes);
  auto blockType = RankedTensorType::get(shape, type.getElementType());
  Builder attrs(accumulate.getContext());
  SmallVector<StringRef> axisNames;
  for (StringAttr axis : split.axes)
    axisNames.push_back(axis.getValue());
  ArrayAttr axes = attrs.getStrArrayAttr(axisNames);
  IntegerAttr dim = attrs.getI64IntegerAttr(split.dim);
  Attribute stage = add->getAttr(kStageAttr);

  Value grad = add.getRhs();
  auto sum = grad.getDefiningOp<AllReduceOp>();
  bool scatter = sum && grad.hasOneUse() && sum.getInputs().size() == 1 &&
                 sum.getReduction() == ReduceKind::Sum && sum.getAxes() == axes;
  OpBuilder b(scatter ? sum.getOperation() : add.getOperation());
  Operation *block =
      scatter ? ReduceScatterOp::create(b, sum.getLoc(), blockType,
                                        sum.getInputs()[0],
                                        split.sharding.getMesh(), axes, dim)
              : ShardSliceOp::create(b, add.getLoc(), blockType, grad,
                                     split.sharding.getMesh(), axes, dim);
  if (scatter)
    block->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
  else if (stage)
    block->setAttr(kStageAttr, stage);
  acc.getResult().setType(blockType);
  acc->setAttr(kShardOfAttr, held);
  b.setInsertionPoint(add);
  auto total =
      AddOp::create(b, add.getLoc(), acc.getResult(), block->getResult(0));
  total->setDiscardableAttrs(add->getDiscardableAttrDictionary());
  assign.getValueMutable().assign(total);
  add.erase();
  if (scatter)
    sum.erase();
  return success();
}

struct PartitionOptimizerPass
    : weft::impl::PartitionOptimizerBase<PartitionOptimizerPass> {
  using PartitionOptimizerBase::PartitionOptimizerBase;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!step) {
      getOperation().emitError("weft-partition-optimizer: no function @")
          << func;
      return signalPassFailure();
    }
    if (failed(seed(step)))
      return signalPassFailure();
    if (seeded) {
      propagateShardings(step);
      if (failed(partition(step, /*differentiable=*/false)))
        return signalPassFailure();
    }
    // A block's place in the global tensor: the parameter's own split (a
    // tensor-parallel one) and the optimizer split on top.
    for (auto &[name, held] : blockShards)
      params.lookup(name)->setAttr(kShardOfAttr, held);
    for (auto &[name, grad] : taggedGradients(step, /*strip=*/true))
      if (ParamOp param = params.lookup(name))
        param->setAttr(kGradElementsAttr,
                       IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                        heldGradientElements(grad)));
  }

  /// Annotates the step's values with each optimizer split (see the file
  /// comment).
  LogicalResult seed(func::FuncOp step) {
    for (ParamOp p : step.getBody().front().getOps<ParamOp>())
      params[p.getName()] = p;
    accumulate = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        step, StringAttr::get(step.getContext(), kAccumulateFunc));
    llvm::StringMap<Value> grads = taggedGradients(step, /*strip=*/false);
    for (ParamOp param : step.getBody().front().getOps<ParamOp>()) {
      FailureOr<std::optional<OptimizerSplit>> read = readSplit(param);
      if (failed(read))
        return failure();
      if (!*read)
        continue;
      const OptimizerSplit &split = **read;
      Value grad = grads.lookup(param.getName());
      if (!grad)
        return param.emitError("weft-partition-optimizer: parameter '")
               << param.getName()
               << "' has an optimizer split but no gradient tagged "
               << kGradOfAttr << " (run weft-optimizer-adamw first)";
      bool splitGradient = param->hasAttr(kGradShardAttr);
      if (storedSplit(param, split)) {
        if (!splitGradient)
          keepWholeGradient(grad, split);
        continue;
      }
      ParamOp moments[2] = {
          params.lookup((param.getName() + ".exp_avg").str()),
          params.lookup((param.getName() + ".exp_avg_sq").str())};
      if (!moments[0] || !moments[1])
        return param.emitError("weft-partition-optimizer: parameter '")
               << param.getName()
               << "' has no Adam moments (run weft-optimizer-adamw first)";
      DimAxes whole(param.getType().getRank());
      DimAxes blocks = whole;
      blocks[split.dim] = split.axes;
      FlatSymbolRefAttr mesh = split.sharding.getMesh();
      ShardingAttr replicated = toAttr(&getContext(), mesh, whole);
      // What a moment's shard_of will say: the parameter's split, if any,
      // and the optimizer split.
      DimAxes held = whole;
      if (auto own = param->getAttrOfType<ShardingAttr>(kShardOfAttr))
        held = readDims(param.getResult(), own);
      held[split.dim].append(split.axes.begin(), split.axes.end());
      ShardingAttr heldAttr = toAttr(&getContext(), mesh, held);
      SmallVector<ParamOp, 3> stored(std::begin(moments), std::end(moments));
      // ZeRO-2's gradient accumulator is a block too, in both programs.
      ParamOp acc =
          params.lookup((param.getName() + kGradAccumulatorSuffix).str());
      if (splitGradient && acc) {
        stored.push_back(acc);
        if (accumulate && failed(accumulateBlocks(accumulate, param.getName(),
                                                  split, heldAttr)))
          return failure();
      }
      for (ParamOp block : stored) {
        setSharding(block.getResult(), split.sharding);
        blockShards[block.getName()] = heldAttr;
      }
      setSharding(param.getResult(), replicated);
      setSharding(grad, splitGradient ? split.sharding : replicated);
      seeded = true;
    }
    return success();
  }

  llvm::StringMap<ParamOp> params;
  /// The moments' (and ZeRO-2 accumulators') blocks, by parameter name.
  llvm::StringMap<ShardingAttr> blockShards;
  /// The per-micro-batch program, if the step has micro-batches.
  func::FuncOp accumulate;
  bool seeded = false;
};
} // namespace

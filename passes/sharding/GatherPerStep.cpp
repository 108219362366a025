//===- GatherPerStep.cpp - ZeRO-3 parameters gathered once per step -------===//
//
// weft-partition all-gathers a ZeRO-3 parameter's stored block where the
// program uses it. With micro-batches that gather runs in @accumulate, once
// per micro-batch (twice with weft-reshard-after-forward): the same bytes M
// or 2M times a step. This pass moves every such gather chain (the stored
// block, the cast to the compute type in mixed precision, one all-gather
// per split dimension) into a program @gather that the step runs once,
// before its micro-batches, and which assigns the whole parameter to a
// state parameter `<name>.gathered`; @accumulate reads that instead,
// forward and backward. The gradients are untouched: the gather's gradient
// (a reduce-scatter) was written by autodiff already and still runs per
// micro-batch.
//
// This is FSDP's reshard_after_forward=False, which torchtitan picks under
// pipeline parallelism: each rank holds its parameters (its stages' under
// pp) whole for the step. Plan gather=microbatch keeps ZeRO-3's memory
// instead.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/ShardingState.h"

#include "passes/pipeline/Names.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace weft {
#define GEN_PASS_DEF_GATHERPERSTEP
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

namespace {
/// A gather chain: the stored parameter, then the ops from it to the whole
/// value (an optional cast, then all-gathers), in order.
struct Chain {
  ParamOp param;
  SmallVector<Operation *> ops;
  Value whole() const { return ops.back()->getResult(0); }
};

/// The chain ending at `gather`, if it starts at a stored parameter and
/// `gather` is its last all-gather (no all-gather reads its result).
std::optional<Chain> chainEndingAt(AllGatherOp gather) {
  for (Operation *user : gather->getUsers())
    if (isa<AllGatherOp>(user))
      return std::nullopt;
  Chain chain;
  Value v = gather.getResult();
  while (auto g = v.getDefiningOp<AllGatherOp>()) {
    chain.ops.push_back(g);
    v = g.getInput();
  }
  if (auto castOp = v.getDefiningOp<CastOp>()) {
    chain.ops.push_back(castOp);
    v = castOp.getInput();
  }
  chain.param = v.getDefiningOp<ParamOp>();
  if (!chain.param || !chain.param->hasAttr(kShardOfAttr))
    return std::nullopt;
  std::reverse(chain.ops.begin(), chain.ops.end());
  return chain;
}

/// The block of the global tensor a gathered parameter is: the stored one
/// with the gathered axes taken off (a tensor-parallel split stays).
ShardingAttr gatheredShard(Chain chain) {
  auto held = chain.param->getAttrOfType<ShardingAttr>(kShardOfAttr);
  DimAxes dims = readDims(chain.param.getResult(), held);
  for (Operation *op : chain.ops)
    if (auto g = dyn_cast<AllGatherOp>(op)) {
      Axes &axes = dims[g.getDim()];
      for (StringAttr axis : g.getAxes().getAsRange<StringAttr>())
        llvm::erase(axes, axis);
    }
  return isReplicated(dims)
             ? ShardingAttr()
             : toAttr(chain.param.getContext(), held.getMesh(), dims);
}

/// A state parameter `name` of `type` (zeros until @gather assigns it), on
/// `like`'s pipeline stage. Transient: @gather refills it from the stored
/// blocks each step before anything reads it, so checkpoints skip it (it
/// would be the whole parameter on every dp rank).
ParamOp declareGathered(OpBuilder &b, Location loc, Type type, StringRef name,
                        ShardingAttr shard, ParamOp like) {
  auto p = ParamOp::create(b, loc, type, b.getStringAttr(name),
                           InitKindAttr::get(b.getContext(), InitKind::Zeros),
                           FloatAttr(), b.getUnitAttr());
  if (shard)
    p->setAttr(kShardOfAttr, shard);
  if (Attribute stage = like->getAttr(kStageAttr))
    p->setAttr(kStageAttr, stage);
  p->setAttr(kTransientAttr, b.getUnitAttr());
  return p;
}
} // namespace

FailureOr<int64_t> weft::gatherPerStep(ModuleOp module) {
  auto acc = module.lookupSymbol<func::FuncOp>(kAccumulateFunc);
  if (!acc)
    return module.emitError("weft-gather-per-step: needs @")
               << kAccumulateFunc << " (run weft-accumulate-gradients first)",
           failure();
  if (module.lookupSymbol(kGatherFunc))
    return module.emitError("weft-gather-per-step: a symbol named @")
               << kGatherFunc << " already exists",
           failure();
  Block &body = acc.getBody().front();
  // One gathered parameter per stored one, however many chains read it.
  llvm::MapVector<ParamOp, SmallVector<Chain>> chains;
  for (AllGatherOp g : body.getOps<AllGatherOp>())
    if (std::optional<Chain> chain = chainEndingAt(g))
      chains[chain->param].push_back(*chain);
  if (chains.empty())
    return 0;
  llvm::StringSet<> names;
  for (ParamOp p : body.getOps<ParamOp>())
    names.insert(p.getName());

  OpBuilder b(acc);
  Location loc = acc.getLoc();
  auto gatherFunc =
      func::FuncOp::create(b, loc, kGatherFunc, b.getFunctionType({}, {}));
  Block *gatherBody = gatherFunc.addEntryBlock();
  OpBuilder gb = OpBuilder::atBlockBegin(gatherBody);
  OpBuilder ab = OpBuilder::atBlockBegin(&body);
  for (auto &[param, list] : chains) {
    std::string name = (param.getName() + kGatheredSuffix).str();
    if (names.contains(name))
      return param.emitError("weft-gather-per-step: parameter '")
                 << param.getName() << "' would be gathered into '" << name
                 << "', which already exists",
             failure();
    Type type = list.front().whole().getType();
    for (const Chain &c : list)
      if (c.whole().getType() != type)
        return c.ops.back()->emitError("weft-gather-per-step: parameter '")
                   << param.getName() << "' is gathered to " << type
                   << " and to " << c.whole().getType(),
               failure();
    ShardingAttr shard = gatheredShard(list.front());
    // @gather: the stored block, its chain, the assign.
    IRMapping map;
    gb.clone(*param, map);
    for (Operation *op : list.front().ops)
      gb.clone(*op, map);
    Value whole = map.lookup(list.front().whole());
    declareGathered(gb, param.getLoc(), type, name, shard, param);
    auto assign = AssignOp::create(gb, param.getLoc(), name, whole);
    if (Attribute stage = param->getAttr(kStageAttr))
      assign->setAttr(kStageAttr, stage);
    // @accumulate: every chain's whole value is the gathered parameter.
    ParamOp gathered =
        declareGathered(ab, param.getLoc(), type, name, shard, param);
    for (const Chain &c : list) {
      c.whole().replaceAllUsesWith(gathered.getResult());
      for (Operation *op : llvm::reverse(c.ops))
        if (op->use_empty())
          op->erase();
    }
  }
  func::ReturnOp::create(gb, loc);
  // Parameters in @gather come first, as in every program.
  SmallVector<Operation *> params;
  for (Operation &op : *gatherBody)
    if (isa<ParamOp>(op))
      params.push_back(&op);
  for (Operation *p : llvm::reverse(params))
    p->moveBefore(&gatherBody->front());
  return static_cast<int64_t>(chains.size());
}

namespace {
struct GatherPerStepPass : weft::impl::GatherPerStepBase<GatherPerStepPass> {
  void runOnOperation() override {
    if (failed(gatherPerStep(getOperation())))
      signalPassFailure();
  }
};
} // namespace

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
// A parameter read only by FP8 quantizations that together hold no more
// than it (one per-tensor or 128 x 128 quantization, which the backward
// reads transposed; one per slice of GPT-2's c_attn) is quantized in
// @gather instead: @gather computes the quantization's maxima from the
// whole value (delayed scaling's history read as @accumulate reads it:
// only the step writes it; a tp weight's maxima max all-reduced over tp)
// and assigns the quantized values to `<name>.fp8.gathered` and the
// maxima to `<name>.fp8.amax.gathered`, and @accumulate quantizes that
// state by those maxima, which gives it back to the bit (each quantized
// element times the same scale is its FP8 value again). weft-fp8-gather, run on
// @gather next, then moves the gather after the quantization, so that
// the step's one gather moves FP8 codes. A parameter whose backward
// re-quantizes it in other blocks (row-wise, MXFP8) has two quantized
// copies, which in the model's type would hold more than the one they
// replace: it keeps its values state, unless FP8 storage holds the copies
// as codes (`fp8-codes`), a byte an element each, as much as bf16 holds.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/ShardingState.h"

#include "passes/pipeline/Names.h"
#include "passes/precision/Fp8Codes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
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

/// What @gather may compute for @accumulate from a parameter's whole
/// values: ops every micro-batch computes alike from them, from parameters
/// @accumulate does not assign (delayed scaling's amax history, which only
/// the step pushes) and from constants. Nothing that reads a micro-batch's
/// data, and of collectives only all-reduces (a tensor-parallel weight's
/// maxima max-reduced over tp) and copy_to_group (an identity forward).
class StepInvariant {
public:
  StepInvariant(func::FuncOp acc, ArrayRef<Value> wholes)
      : wholes(wholes.begin(), wholes.end()) {
    for (AssignOp a : acc.getBody().front().getOps<AssignOp>())
      assigned.insert(a.getName());
  }

  /// Whether `v` is so computed; its ops (not the whole values) are added
  /// to `slice`.
  bool check(Value v, llvm::SetVector<Operation *> &slice) {
    if (wholes.contains(v))
      return true;
    Operation *op = v.getDefiningOp();
    if (!op)
      return false;
    if (slice.contains(op))
      return true;
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (assigned.contains(p.getName()))
        return false;
    } else if (op->getNumRegions() != 0 || !isPure(op) ||
               isa<AllGatherOp, ReduceScatterOp, AllToAllOp, RaggedAllToAllOp,
                   RingShiftOp, ShardSliceOp>(op)) {
      return false;
    }
    for (Value operand : op->getOperands())
      if (!check(operand, slice))
        return false;
    slice.insert(op);
    return true;
  }

  /// Whether `a` and `b` compute the same, one of the whole values
  /// standing for any other (a parameter's chains all gather it).
  bool same(Value a, Value b) const {
    if (a == b || (wholes.contains(a) && wholes.contains(b)))
      return true;
    auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
    if (!ra || !rb || ra.getResultNumber() != rb.getResultNumber())
      return false;
    return OperationEquivalence::isEquivalentTo(
        ra.getOwner(), rb.getOwner(),
        [&](Value x, Value y) { return success(same(x, y)); },
        /*markEquivalent=*/nullptr,
        OperationEquivalence::IgnoreLocations |
            OperationEquivalence::IgnoreDiscardableAttrs);
  }

private:
  llvm::SmallDenseSet<Value, 4> wholes;
  llvm::StringSet<> assigned;
};

/// The sharding of maxima `amax` (made by the ops `made`) of a gathered
/// value split as `valueShard` (a tensor-parallel split that stays): a
/// dimension is split as the value's unless its one block spans the whole
/// dimension, its maxima max all-reduced over the split (a per-tensor
/// scale); a rank's one block of its own (a 128-row tp shard of 128 x 128
/// blocks) is its own.
ShardingAttr amaxShard(ShardingAttr valueShard, Value amax,
                       const llvm::SetVector<Operation *> &made) {
  if (!valueShard)
    return {};
  auto type = cast<RankedTensorType>(amax.getType());
  auto reducedOver = [&](ArrayAttr axes) {
    return llvm::any_of(made, [&](Operation *op) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      return reduce && reduce.getReduction() == ReduceKind::Max &&
             llvm::all_of(axes, [&](Attribute axis) {
               return llvm::is_contained(reduce.getAxes(), axis);
             });
    });
  };
  DimAxes dims(type.getRank());
  for (auto [d, axes] : llvm::enumerate(valueShard.getDims())) {
    auto list = cast<ArrayAttr>(axes);
    if (type.getDimSize(d) == 1 && reducedOver(list))
      continue;
    for (StringAttr axis : list.getAsRange<StringAttr>())
      dims[d].push_back(axis);
  }
  return isReplicated(dims)
             ? ShardingAttr()
             : toAttr(amax.getContext(), valueShard.getMesh(), dims);
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

/// Whether FP8 storage would move and hold quantization `q`'s codes, `q`
/// reading `whole` (the last of a chain's gathers) or a view of it:
/// weft-fp8-gather moves the gathers after `q` only where no shard boundary
/// cuts its blocks (blocksStraddleShards), and the collectives move whole
/// four-byte words of a shard
/// (weft::gathersFp8Codes). A view's blocks count where it keeps each
/// gathered dimension whole, after the same elements (a slice of GPT-2's
/// c_attn reshaped), else only as one scale.
bool codesMove(Value whole, Fp8QuantizeOp q) {
  ArrayRef<int64_t> shape = q.getType().getShape(),
                    grid = q.getAmax().getType().getShape(),
                    wholeShape = cast<ShapedType>(whole.getType()).getShape();
  bool oneScale = llvm::all_of(grid, [](int64_t n) { return n == 1; });
  // q's dimension that is `whole`'s dimension d, if any.
  auto keptDim = [&](int64_t d) -> std::optional<size_t> {
    int64_t before = 1, wholeBefore = 1;
    for (int64_t i = 0; i < d; ++i)
      wholeBefore *= wholeShape[i];
    for (size_t i = 0; i < shape.size(); before *= shape[i++])
      if (before == wholeBefore && shape[i] == wholeShape[d])
        return i;
    return std::nullopt;
  };
  int64_t shardElements = q.getType().getNumElements();
  for (auto g = whole.getDefiningOp<AllGatherOp>(); g;
       g = g.getInput().getDefiningOp<AllGatherOp>()) {
    int64_t n = g.groupSize();
    shardElements /= n;
    if (oneScale)
      continue;
    std::optional<size_t> d = keptDim(static_cast<int64_t>(g.getDim()));
    if (!d || blocksStraddleShards(shape[*d], shape[*d] / n, grid[*d]))
      return false;
  }
  return shardElements % 4 == 0;
}

/// Declares the state parameter `<name><suffix>.gathered` of a type and a
/// sharding, assigned a value in @gather; returns @accumulate's.
using DeclareState = llvm::function_ref<FailureOr<ParamOp>(
    StringRef suffix, Type type, ShardingAttr shard, Value value)>;

/// Moves the FP8 quantizations of one parameter's whole values `wholes`
/// (in @accumulate `acc`, of sharding `shard`) into @gather when they are
/// all that reads them and their quantized copies hold no more than the
/// values do (see the file comment): `map` takes @accumulate's values to
/// @gather's, `gb` builds there.
LogicalResult quantizeOncePerStep(func::FuncOp acc, ArrayRef<Value> wholes,
                                  ShardingAttr shard, IRMapping &map,
                                  OpBuilder &gb, DeclareState declare,
                                  bool fp8Codes) {
  // The quantizations reading the whole values, through views.
  SmallVector<Fp8QuantizeOp> quants;
  SmallVector<Value> work(wholes.begin(), wholes.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<SliceOp, ReshapeOp>(user))
        work.push_back(user->getResult(0));
      else if (auto q = dyn_cast<Fp8QuantizeOp>(user);
               q && use.getOperandNumber() == 0 &&
               !llvm::is_contained(quants, q))
        quants.push_back(q);
    }
  }
  if (quants.empty())
    return success();
  StepInvariant invariant(acc, wholes);
  llvm::SetVector<Operation *> slice; // What @gather computes for them.
  for (Fp8QuantizeOp q : quants) {
    if (q.getGroupRows() || !invariant.check(q.getInput(), slice) ||
        !invariant.check(q.getAmax(), slice))
      return success();
    // A view's split under tp is not the parameter's: left as it is.
    if (shard && q.getType() != wholes.front().getType())
      return success();
  }
  // They must be all that reads the whole values, or the values would be
  // held too (parameters and constants stay where they are).
  auto covered = [&](Operation *user) {
    return slice.contains(user) ||
           llvm::is_contained(quants, dyn_cast<Fp8QuantizeOp>(user));
  };
  for (Value w : wholes)
    if (!llvm::all_of(w.getUsers(), covered))
      return success();
  for (Operation *op : slice)
    if (!isa<ParamOp, ConstantOp>(op) && !llvm::all_of(op->getUsers(), covered))
      return success();
  // One state per distinct quantization (a recomputed forward quantizes
  // alike), which together hold no more bytes than the value (a byte an
  // element where FP8 storage holds them as codes; their maxima, a float
  // a row or block, left out).
  auto bytesOf = [](Type t, bool codes) {
    auto tensor = cast<RankedTensorType>(t);
    return tensor.getNumElements() *
           (codes ? 1 : (tensor.getElementTypeBitWidth() + 7) / 8);
  };
  SmallVector<SmallVector<Fp8QuantizeOp, 2>> kinds;
  int64_t held = 0;
  for (Fp8QuantizeOp q : quants) {
    auto kind = llvm::find_if(kinds, [&](SmallVector<Fp8QuantizeOp, 2> &k) {
      return invariant.same(k.front().getResult(), q.getResult());
    });
    if (kind != kinds.end()) {
      kind->push_back(q);
      continue;
    }
    kinds.push_back({q});
    held += bytesOf(q.getType(), fp8Codes && codesMove(wholes.front(), q));
  }
  if (held > bytesOf(wholes.front().getType(), false))
    return success();

  for (Operation *op : slice)
    if (!map.contains(op->getResult(0)))
      gb.clone(*op, map);
  for (auto [i, kind] : llvm::enumerate(kinds)) {
    Fp8QuantizeOp q = kind.front();
    auto once = cast<Fp8QuantizeOp>(gb.clone(*q, map));
    // The backward's blocks were autodiff's to read; @gather has none.
    once.removeBackwardBlockAttr();
    once->removeAttr(kBackwardAmaxAxesAttr);
    once->removeAttr(kAmaxMeshAttr);
    std::string tag = i == 0 ? ".fp8" : ".fp8_" + std::to_string(i);
    FailureOr<ParamOp> values =
        declare(tag, q.getType(), shard, once.getResult());
    llvm::SetVector<Operation *> made;
    invariant.check(q.getAmax(), made);
    FailureOr<ParamOp> maxima =
        declare(tag + ".amax", q.getAmax().getType(),
                amaxShard(shard, q.getAmax(), made), once.getAmax());
    if (failed(values) || failed(maxima))
      return failure();
    // Quantized again by the same maxima: the same values, to the bit.
    for (Fp8QuantizeOp member : kind) {
      member.getInputMutable().assign(values->getResult());
      member.getAmaxMutable().assign(maxima->getResult());
    }
  }
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(acc.getBody().front())))
    if (slice.contains(&op) && !isa<ParamOp>(op) && op.use_empty())
      op.erase();
  return success();
}
} // namespace

FailureOr<int64_t> weft::gatherPerStep(ModuleOp module, bool fp8Codes) {
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
    Type type = list.front().whole().getType();
    for (const Chain &c : list)
      if (c.whole().getType() != type)
        return c.ops.back()->emitError("weft-gather-per-step: parameter '")
                   << param.getName() << "' is gathered to " << type
                   << " and to " << c.whole().getType(),
               failure();
    ShardingAttr shard = gatheredShard(list.front());
    // A state parameter of @gather and @accumulate, assigned in @gather.
    ParamOp stored = param;
    auto declare = [&](StringRef suffix, Type stateType,
                       ShardingAttr stateShard,
                       Value value) -> FailureOr<ParamOp> {
      std::string name = (stored.getName() + suffix + kGatheredSuffix).str();
      if (!names.insert(name).second)
        return stored.emitError("weft-gather-per-step: parameter '")
                   << stored.getName() << "' would be gathered into '" << name
                   << "', which already exists",
               failure();
      declareGathered(gb, stored.getLoc(), stateType, name, stateShard, stored);
      auto assign = AssignOp::create(gb, stored.getLoc(), name, value);
      if (Attribute stage = stored->getAttr(kStageAttr))
        assign->setAttr(kStageAttr, stage);
      return declareGathered(ab, stored.getLoc(), stateType, name, stateShard,
                             stored);
    };
    // @gather: the stored block and its chain.
    IRMapping map;
    gb.clone(*param, map);
    for (Operation *op : list.front().ops)
      gb.clone(*op, map);
    SmallVector<Value> wholes;
    for (const Chain &c : list) {
      wholes.push_back(c.whole());
      map.map(c.whole(), map.lookup(list.front().whole()));
    }
    if (failed(quantizeOncePerStep(acc, wholes, shard, map, gb, declare,
                                   fp8Codes)))
      return failure();
    // Whatever else reads it reads the whole parameter.
    if (llvm::any_of(wholes, [](Value w) { return !w.use_empty(); })) {
      FailureOr<ParamOp> gathered =
          declare("", type, shard, map.lookup(list.front().whole()));
      if (failed(gathered))
        return failure();
      for (Value w : wholes)
        w.replaceAllUsesWith(gathered->getResult());
    }
    for (const Chain &c : list)
      for (Operation *op : llvm::reverse(c.ops))
        if (op->use_empty())
          op->erase();
  }
  // What only a merged quantization read (its own copy of the maxima).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*gatherBody)))
    if (isOpTriviallyDead(&op))
      op.erase();
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
  using GatherPerStepBase::GatherPerStepBase;
  void runOnOperation() override {
    if (failed(gatherPerStep(getOperation(), fp8Codes)))
      signalPassFailure();
  }
};
} // namespace

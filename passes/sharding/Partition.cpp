//===- Partition.cpp - one rank's program from a sharded function ---------===//
//
// Walks the function once, in order, keeping for every value how its global
// tensor is laid out on the ranks:
//   dims     - the axes splitting each dimension (the local shape follows);
//   partial  - axes over which the local value is one term of a sum (or mean)
//              that no collective has combined yet;
//   varying  - axes along which the local value may differ between ranks.
// Ops are rewritten in place: operands are brought to the layout the op's
// factors ask for (all_gather, all_reduce, reduce_scatter, shard_slice),
// invariant operands entering computation that varies get
// weft.copy_to_group, and results take local types. Autodiff later
// differentiates this program; the collectives' gradient rules make the
// backward communication.
//
// Mixture-of-experts layers are partitioned by hand rather than by factors:
// the packed rows of an expert dispatch are no block of a global tensor.
// With the tokens split (dp, ep) each rank routes and dispatches its own
// tokens (the route agrees on the kept pairs over the token axes); a grouped
// matmul whose expert weights are split over ep first sends every rank's
// rows to their experts' ranks (the counts by weft.all_to_all, the rows by
// weft.ragged_all_to_all), elementwise ops keep them there, and any other
// use (the combine) brings them home by the inverse exchange.
//
// A program that will not be differentiated (the training step, partitioned
// again for ZeRO-1/2 by weft-partition-optimizer) gets no copy_to_group; there
// an assign takes its parameter's layout, and an all-reduce whose result is
// annotated split over the reduction's own axes becomes a reduce-scatter.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"
#include "passes/sharding/ShardingState.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_PARTITION
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

namespace {
using AxisSet = llvm::SmallSetVector<StringAttr, 4>;

/// Whether `op`, reading packed expert rows [N, D] (whose blocks are no
/// blocks of a global shape), works on each row alone: elementwise ops,
/// and FP8 maxima and quantizations with a scale per row or per tile of
/// one (not one scale for the whole buffer, whose maxima have one row).
/// Such rows stay at their experts' ranks through it.
bool rowLocal(Operation *op) {
  if (op->hasTrait<OpTrait::Elementwise>())
    return true;
  auto manyRows = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(0) > 1;
  };
  if (auto amax = dyn_cast<Fp8AmaxOp>(op))
    return manyRows(amax.getResult());
  if (auto q = dyn_cast<Fp8QuantizeOp>(op))
    return manyRows(q.getAmax());
  if (auto mark = dyn_cast<Fp8QuantizeGradOp>(op))
    return !mark.getHistory() && mark.getBlock()[0] == 1;
  return false;
}

struct Layout {
  DimAxes dims;
  Axes partial;
  ReduceKind partialKind = ReduceKind::Sum;
  AxisSet varying;
};

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshOp mesh, bool differentiable)
      : func(func), mesh(mesh), differentiable(differentiable),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        b(func.getContext()) {}

  LogicalResult run() {
    Block &body = func.getBody().front();
    // Rules read shapes and attributes, so take them all while the function
    // is still global.
    for (Operation &op : body)
      if (auto ruled = dyn_cast<ShardingRuleOpInterface>(&op))
        rules[&op] = ruled.getShardingRule();
    for (BlockArgument arg : body.getArguments())
      define(arg, readDims(arg));
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (created.contains(&op))
        continue; // Already local: inserted after the op being rewritten.
      b.setInsertionPoint(&op);
      if (failed(rewrite(&op)))
        return failure();
    }
    // Quantizations made again at the experts' ranks: the ones at home go
    // when nothing else reads them.
    for (Fp8QuantizeOp q : homeQuantizations) {
      if (!q->use_empty())
        continue;
      Operation *amax = q.getAmax().getDefiningOp();
      q->erase();
      if (amax->use_empty())
        amax->erase();
    }
    SmallVector<Type> results(body.getTerminator()->getOperandTypes().begin(),
                              body.getTerminator()->getOperandTypes().end());
    func.setType(
        FunctionType::get(func.getContext(), body.getArgumentTypes(), results));
    // Shardings are now carried by the local types and collectives. What
    // the runtime must know (how inputs and outputs are cut from the global
    // tensors) moves to `weft.shard_of`, which describes a local value.
    func.walk([](Operation *op) { op->removeAttr(kShardingAttr); });
    for (BlockArgument arg : body.getArguments())
      if (Attribute attr = func.getArgAttr(arg.getArgNumber(), kShardingAttr)) {
        func.removeArgAttr(arg.getArgNumber(), kShardingAttr);
        func.setArgAttr(arg.getArgNumber(), kShardOfAttr, attr);
      }
    return success();
  }

private:
  /// Gives `v` its local type under `dims` and records its layout: a split
  /// value differs between the ranks of its axes.
  void define(Value v, DimAxes dims, AxisSet varying = {}) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    for (auto [d, axes] : llvm::enumerate(dims)) {
      shape[d] /= splitCount(mesh, axes);
      varying.insert(axes.begin(), axes.end());
    }
    v.setType(RankedTensorType::get(shape, type.getElementType()));
    layouts[v] = Layout{std::move(dims), {}, ReduceKind::Sum, varying};
  }

  Layout &layout(Value v) { return layouts[v]; }

  ArrayAttr axesAttr(ArrayRef<StringAttr> axes) {
    return b.getArrayAttr(SmallVector<Attribute>(axes.begin(), axes.end()));
  }

  /// Combines a pending partial sum so `v` holds the full value.
  Value combine(Operation *user, Value v) {
    Layout l = layout(v);
    if (l.partial.empty())
      return v;
    auto kind = ReduceKindAttr::get(b.getContext(), l.partialKind);
    Value sum = AllReduceOp::create(b, user->getLoc(), kind, ValueRange{v},
                                    meshRef, axesAttr(l.partial))
                    .getResult(0);
    for (StringAttr axis : l.partial)
      l.varying.remove(axis);
    l.partial.clear();
    layouts[sum] = l;
    return sum;
  }

  /// Brings operand `v` of `user` to `want` (axes per dimension).
  /// `v` laid out as `want`; the first use that needs a layout makes it,
  /// later uses share it (one all-gather feeds q, k and v).
  FailureOr<Value> reshard(Operation *user, unsigned index, Value v,
                           const DimAxes &want) {
    Layout have = layout(v);
    if (have.dims == want && have.partial.empty())
      return v;
    Value &cached = reshards[{v, toAttr(b.getContext(), meshRef, want)}];
    if (!cached) {
      FailureOr<Value> made = makeLayout(user, index, v, want);
      if (failed(made))
        return failure();
      cached = *made;
    }
    return cached;
  }

  FailureOr<Value> makeLayout(Operation *user, unsigned index, Value v,
                              const DimAxes &want) {
    // A partial sum wanted split along a dimension over the same axes is
    // reduce-scattered there (sequence parallelism's replacement for the
    // tensor-parallel all-reduce); any other partial sum is all-reduced.
    Layout l = layout(v);
    if (!l.partial.empty() && l.partialKind != ReduceKind::Max)
      for (size_t d = 0; d < want.size(); ++d)
        if (l.dims[d].empty() && !want[d].empty() && want[d] == l.partial) {
          v = scatter(user, v, d, l.partial, l.partialKind == ReduceKind::Mean);
          break;
        }
    v = combine(user, v);
    // Gather every dimension split otherwise than wanted first, then split
    // the wanted ones: an axis moving from one dimension to another
    // ([_, _, tp] to [_, tp, _]) must be free before it splits again, or
    // the split would read blocks that differ per rank as copies.
    for (size_t d = 0; d < want.size(); ++d) {
      l = layout(v);
      if (l.dims[d] != want[d] && !l.dims[d].empty()) {
        // Gather the dimension whole. The gathered value still counts as
        // varying: each rank's use of it is one gradient contribution.
        auto type = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[d] *= splitCount(mesh, l.dims[d]);
        v = AllGatherOp::create(
            b, user->getLoc(),
            RankedTensorType::get(shape, type.getElementType()), v, meshRef,
            axesAttr(l.dims[d]), b.getI64IntegerAttr(d));
        l.dims[d].clear();
        layouts[v] = l;
      }
    }
    for (size_t d = 0; d < want.size(); ++d) {
      l = layout(v);
      if (l.dims[d] == want[d] || want[d].empty())
        continue;
      bool varying = llvm::all_of(
          want[d], [&](StringAttr a) { return l.varying.contains(a); });
      bool invariant = llvm::none_of(
          want[d], [&](StringAttr a) { return l.varying.contains(a); });
      if (invariant) {
        // The same on every rank: each keeps its block; the gradient is the
        // all-gather of the blocks' gradients.
        l.dims[d] = want[d];
        l.varying.insert(want[d].begin(), want[d].end());
        v = ShardSliceOp::create(b, user->getLoc(), localType(v, d, want[d]), v,
                                 meshRef, axesAttr(want[d]),
                                 b.getI64IntegerAttr(d));
        layouts[v] = l;
      } else if (varying) {
        // Computed alike on every rank but counted once per rank (it came
        // from gathered values): the mean of the copies is the value, and
        // its gradient sends each rank 1/n of the block's gradient, which
        // the gathers' reduce-scatters sum back to one.
        v = scatter(user, v, d, want[d], /*mean=*/true);
      } else {
        return user->emitOpError("operand ")
                   << index << " would need dimension " << d
                   << " split over axes along which it partly varies",
               failure();
      }
    }
    return v;
  }

  RankedTensorType localType(Value v, int64_t d, ArrayRef<StringAttr> axes) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[d] /= splitCount(mesh, axes);
    return RankedTensorType::get(shape, type.getElementType());
  }

  /// Reduce-scatters `v` along `d` over `axes` (scaled by 1/n first for a
  /// mean); the result is split there and no longer partial.
  Value scatter(Operation *user, Value v, int64_t d, Axes axes, bool mean) {
    return scatter(user, v, layout(v), d, std::move(axes), mean);
  }
  /// The same for `v` laid out as `l`.
  Value scatter(Operation *user, Value v, Layout l, int64_t d, Axes axes,
                bool mean) {
    if (mean) {
      weft::detail::Emitter e{b, user->getLoc()};
      v = e.mul(v, e.splatLike(v, 1.0 / splitCount(mesh, axes)));
    }
    Value out = ReduceScatterOp::create(b, user->getLoc(),
                                        localType(v, d, axes), v, meshRef,
                                        axesAttr(axes), b.getI64IntegerAttr(d));
    l.dims[d] = axes;
    l.partial.clear();
    layouts[out] = l;
    return out;
  }

  /// Passes `v` through copy_to_group for the axes of `varying` it does not
  /// vary along (float values only: integer ids have no gradient).
  Value enterVarying(Operation *user, Value v, const AxisSet &varying) {
    Layout l = layout(v);
    Axes missing;
    for (StringAttr axis : varying)
      if (!l.varying.contains(axis))
        missing.push_back(axis);
    if (missing.empty() ||
        !isWeftFloat(cast<RankedTensorType>(v.getType()).getElementType()))
      return v;
    // One copy per value and axes, so a value used twice (a tied embedding)
    // has its gradient summed locally first and all-reduced once.
    ArrayAttr axes = axesAttr(missing);
    if (Value copy = copies.lookup({v, axes}))
      return copy;
    Value copy;
    Operation *def = v.getDefiningOp();
    if (def && isa<SliceOp, ReshapeOp>(def) && isSharedParamView(v)) {
      // One of several views of a parameter (GPT-2's c_attn read as q, k
      // and v): the parameter (its cast to the compute type, with master
      // weights) is copied once and the copy viewed, so the views'
      // gradients sum locally into one all-reduce, in the compute type as
      // before. A parameter's only view (the rows of a position table the
      // sequence reads) is reduced as the view: fewer bytes.
      IRMapping map;
      map.map(def->getOperand(0),
              enterVarying(def, def->getOperand(0), varying));
      copy = b.clone(*def, map)->getResult(0);
    } else {
      copy = CopyToGroupOp::create(b, user->getLoc(), v, meshRef, axes);
    }
    copies[{v, axes}] = copy;
    l.varying.insert(missing.begin(), missing.end());
    layouts[copy] = l;
    return copy;
  }

  /// Whether `v` is a chain of views (slices, reshapes) of a parameter or
  /// its cast that has other uses besides.
  static bool isSharedParamView(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<SliceOp, ReshapeOp>(def)) {
        if (auto castOp = dyn_cast<CastOp>(def))
          def = castOp.getInput().getDefiningOp();
        return def && isa<ParamOp>(def) && !v.hasOneUse();
      }
      v = def->getOperand(0);
    }
    return false;
  }

  /// Rows held at their experts' ranks: how they got there, to go back.
  struct Exchange {
    Axes axes;        // The ep axes they crossed.
    Value homeSizes;  // Rows per expert this rank sent ([E]).
    Value recvSizes;  // Rows per (source, local expert) it received.
    int64_t homeRows; // The rows of the buffer they left.
  };

  /// `rows` (home, with `sizes` rows per expert) sent to the ranks of their
  /// experts along `axes`; the first grouped matmul that needs it makes it,
  /// later ones share it.
  Value exchange(Operation *user, Value rows, Value sizes, const Axes &axes) {
    Value &cached = exchanges[{rows, axesAttr(axes)}];
    if (cached)
      return cached;
    Location loc = user->getLoc();
    auto rowsType = cast<RankedTensorType>(rows.getType());
    auto sizesType = cast<RankedTensorType>(sizes.getType());
    int64_t g = splitCount(mesh, axes), n = rowsType.getDimSize(0);
    int64_t experts = sizesType.getDimSize(0), local = experts / g;
    // What one rank can receive: every peer's rows, at most the experts'
    // capacity, at most min(k, local experts) pairs of each peer's token.
    int64_t bound = g * n;
    if (auto route = sizes.getDefiningOp<ExpertRouteOp>()) {
      ArrayRef<int64_t> idx = route.getIndices().getType().getShape();
      bound = std::min(bound, g * idx[0] * std::min(idx[1], local));
      if (std::optional<uint64_t> c = route.getCapacity())
        bound = std::min(bound, local * static_cast<int64_t>(*c));
    }
    bound = std::max<int64_t>(bound, 1);
    AxisSet varying = layout(sizes).varying;
    varying.insert(axes.begin(), axes.end());
    Value recvSizes =
        AllToAllOp::create(b, loc, sizesType, sizes, meshRef, axesAttr(axes),
                           b.getI64IntegerAttr(0), b.getI64IntegerAttr(0));
    layouts[recvSizes] = Layout{DimAxes(1), {}, ReduceKind::Sum, varying};
    varying.insert(layout(rows).varying.begin(), layout(rows).varying.end());
    Value recv = RaggedAllToAllOp::create(
        b, loc,
        RankedTensorType::get({bound, rowsType.getDimSize(1)},
                              rowsType.getElementType()),
        rows, sizes, recvSizes, meshRef, axesAttr(axes),
        b.getI64IntegerAttr(bound));
    layouts[recv] = Layout{DimAxes(2), {}, ReduceKind::Sum, varying};
    exchanged[recv] = Exchange{axes, sizes, recvSizes, n};
    packedRows.insert(recv);
    return cached = recv;
  }

  /// A grouped matmul's input rows `x` sent to their experts' ranks
  /// (exchange). An FP8 quantization of each row on its own (an expert
  /// GEMM's: a row's, 1 x 128 or 1 x 32 blocks) is made again there
  /// instead, on the raw rows sent: a row's maxima and values are the same
  /// on either side of the exchange, which moves the same bytes, and made
  /// there the quantization feeds the GEMM, as an FP8 GEMM on codes needs
  /// (codegen's Fp8Storage); the one at home is erased once unused.
  Value exchangeInput(Operation *user, Value x, Value sizes, const Axes &axes) {
    auto q = x.getDefiningOp<Fp8QuantizeOp>();
    auto amax = q ? q.getAmax().getDefiningOp<Fp8AmaxOp>() : Fp8AmaxOp();
    if (!amax || amax.getInput() != q.getInput() || !rowLocal(q) ||
        !rowLocal(amax) || !packedRows.contains(q.getInput()))
      return exchange(user, x, sizes, axes);
    Value &cached = requantized[{x, axesAttr(axes)}];
    if (cached)
      return cached;
    Value rows = exchange(user, q.getInput(), sizes, axes);
    int64_t n = cast<RankedTensorType>(rows.getType()).getDimSize(0);
    auto grid = cast<RankedTensorType>(amax.getResult().getType());
    auto there = Fp8AmaxOp::create(
        b, amax.getLoc(),
        RankedTensorType::get({n, grid.getDimSize(1)}, grid.getElementType()),
        rows);
    auto again = Fp8QuantizeOp::create(
        b, q.getLoc(), rows, there, q.getFormatAttr(), q.getPow2ScalesAttr(),
        q.getBackwardBlockAttr(), q.getGroupRowsAttr());
    // Copied first: inserting may move the maps.
    Layout l = layout(rows);
    Exchange e = exchanged.find(rows)->second;
    for (auto [from, to] :
         {std::pair<Operation *, Operation *>{amax, there}, {q, again}}) {
      for (NamedAttribute a : from->getDiscardableAttrs())
        to->setAttr(a.getName(), a.getValue());
      layouts[to->getResult(0)] = l;
      exchanged[to->getResult(0)] = e;
      packedRows.insert(to->getResult(0));
    }
    homeQuantizations.push_back(q);
    return cached = again;
  }

  /// Rows held at their experts' ranks, sent back home.
  Value bringHome(Operation *user, Value v) {
    Value &cached = homes[v];
    if (cached)
      return cached;
    Exchange e = exchanged.find(v)->second;
    auto type = cast<RankedTensorType>(v.getType());
    Value home = RaggedAllToAllOp::create(
        b, user->getLoc(),
        RankedTensorType::get({e.homeRows, type.getDimSize(1)},
                              type.getElementType()),
        v, e.recvSizes, e.homeSizes, meshRef, axesAttr(e.axes),
        b.getI64IntegerAttr(e.homeRows));
    Layout l = layout(v); // Copied first: inserting may move the map.
    layouts[home] = std::move(l);
    packedRows.insert(home);
    return cached = home;
  }

  /// Operand `i` of `op` brought to `want` (setOperands enters the op's
  /// varying axes after).
  FailureOr<Value> operandAs(Operation *op, unsigned i, const DimAxes &want) {
    return reshard(op, i, op->getOperand(i), want);
  }

  /// The tokens' axes of [T, ...] value `v` (its dimension 0 split).
  Axes tokenAxes(Value v) { return layout(v).dims[0]; }

  /// Sets `op`'s operands to `operands`, entering `varying` when
  /// differentiable.
  void setOperands(Operation *op, ArrayRef<Value> operands,
                   const AxisSet &varying) {
    for (auto [i, v] : llvm::enumerate(operands))
      op->setOperand(i, differentiable ? enterVarying(op, v, varying) : v);
  }

  AxisSet varyingOf(ArrayRef<Value> values) {
    AxisSet varying;
    for (Value v : values)
      varying.insert(layout(v).varying.begin(), layout(v).varying.end());
    return varying;
  }

  /// expert_route: tokens split as its indices are; the route agrees on
  /// the kept pairs over those axes (weft.token_axes).
  LogicalResult rewriteRoute(ExpertRouteOp route) {
    Axes tokens = tokenAxes(route.getIndices());
    FailureOr<Value> idx = operandAs(route, 0, DimAxes{tokens, {}});
    if (failed(idx))
      return failure();
    route.getIndicesMutable().assign(*idx);
    if (!tokens.empty())
      route->setAttr(kTokenAxesAttr, axesAttr(tokens));
    AxisSet varying = varyingOf({*idx});
    define(route.getPositions(), DimAxes{tokens, {}}, varying);
    define(route.getCounts(), DimAxes(1), varying);
    return success();
  }

  /// expert_dispatch: this rank's tokens into its own packed rows, at most
  /// all of its pairs.
  LogicalResult rewriteDispatch(ExpertDispatchOp dispatch) {
    Axes tokens = tokenAxes(dispatch.getPositions());
    FailureOr<Value> x = operandAs(dispatch, 0, DimAxes{tokens, {}});
    FailureOr<Value> pos = operandAs(dispatch, 1, DimAxes{tokens, {}});
    if (failed(x) || failed(pos))
      return failure();
    AxisSet varying = varyingOf({*x, *pos});
    setOperands(dispatch, {*x, *pos}, varying);
    ArrayRef<int64_t> pairs =
        cast<RankedTensorType>((*pos).getType()).getShape();
    int64_t rows = std::min<int64_t>(dispatch.getRows(), pairs[0] * pairs[1]);
    dispatch.setRows(rows);
    Value result = dispatch.getResult();
    auto type = cast<RankedTensorType>(result.getType());
    result.setType(RankedTensorType::get({rows, type.getDimSize(1)},
                                         type.getElementType()));
    layouts[result] = Layout{DimAxes(2), {}, ReduceKind::Sum, varying};
    packedRows.insert(result);
    return success();
  }

  /// grouped_matmul: with its experts split over ep, on the rows sent to
  /// them; otherwise on the rows where they are.
  LogicalResult rewriteGroupedMatmul(GroupedMatmulOp gm) {
    Value w = gm.getWeight();
    Layout wl = layout(w);
    if (!wl.partial.empty() || !wl.dims[1].empty() || !wl.dims[2].empty())
      return gm.emitOpError("expert weights may only be split along their "
                            "experts (ep)");
    Value x = gm.getInput(), sizes = gm.getSizes();
    const Axes &ep = wl.dims[0];
    auto held = exchanged.find(x);
    if (!ep.empty() && held == exchanged.end()) {
      x = exchangeInput(gm, x, sizes, ep);
      held = exchanged.find(x);
    } else if (ep.empty() && held != exchanged.end()) {
      x = bringHome(gm, x);
      held = exchanged.end();
    }
    std::optional<Exchange> away;
    if (held != exchanged.end())
      away = held->second;
    if (away) {
      if (away->axes != ep)
        return gm.emitOpError("rows sent over one set of axes meet experts "
                              "split over another");
      sizes = away->recvSizes;
    }
    AxisSet varying = varyingOf({x, w, sizes});
    setOperands(gm, {x, w, sizes}, varying);
    Value result = gm.getResult();
    auto type = cast<RankedTensorType>(result.getType());
    result.setType(RankedTensorType::get(
        {cast<RankedTensorType>(x.getType()).getDimSize(0), type.getDimSize(1)},
        type.getElementType()));
    layouts[result] = Layout{DimAxes(2), {}, ReduceKind::Sum, varying};
    packedRows.insert(result);
    if (away)
      exchanged[result] = *away;
    return success();
  }

  /// expert_combine: each rank's tokens from its own rows (brought home).
  LogicalResult rewriteCombine(ExpertCombineOp combine) {
    Axes tokens = tokenAxes(combine.getPositions());
    Value rows = combine.getExpertOutputs();
    if (exchanged.count(rows))
      rows = bringHome(combine, rows);
    FailureOr<Value> w = operandAs(combine, 1, DimAxes{tokens, {}});
    FailureOr<Value> pos = operandAs(combine, 2, DimAxes{tokens, {}});
    if (failed(w) || failed(pos))
      return failure();
    AxisSet varying = varyingOf({rows, *w, *pos});
    setOperands(combine, {rows, *w, *pos}, varying);
    define(combine.getResult(), DimAxes{tokens, {}}, varying);
    return success();
  }

  /// attention with its sequence split (context parallelism) runs as a
  /// ring over that axis (Liu et al.'s ring attention): each rank keeps its
  /// queries and passes its key/value block and the block's positions one
  /// step round the ring per step, N - 1 times, attending to each block as
  /// it arrives; the blocks' partial results merge by their log-sum-exp
  /// (FlashAttention's rescaling). The shift for the next block is issued
  /// before this block's attention, so the transfer overlaps it
  /// (weft-split-ring-shifts). Autodiff makes the backward: each block's
  /// attention_grad, the merge's gradient into its lse, and dK/dV shifted
  /// back round the ring.
  LogicalResult rewriteAttention(AttentionOp att) {
    ShardingRule rule = rules[att];
    SmallVector<Axes> factors = factorAxes(att, rule);
    // Factors: batch, heads and, with positions, queries and keys.
    if (!att.getQueryPositions() || (factors[2].empty() && factors[3].empty()))
      return rewriteGeneric(att);
    Axes ring = !factors[2].empty() ? factors[2] : factors[3];
    if (ring.size() != 1)
      return att.emitOpError("has its sequence split over several mesh axes; "
                             "a ring runs over one"),
             failure();
    DimAxes rows{factors[0], ring, factors[1], {}};
    SmallVector<Value> operands;
    for (unsigned i = 0; i < 5; ++i) {
      FailureOr<Value> v = operandAs(att, i, i < 3 ? rows : DimAxes{ring});
      if (failed(v))
        return failure();
      operands.push_back(*v);
    }
    AxisSet varying = varyingOf(operands);
    for (const Axes &axes : {factors[0], factors[1], ring})
      varying.insert(axes.begin(), axes.end());
    if (differentiable)
      for (Value &v : operands)
        v = enterVarying(att, v, varying);
    Value q = operands[0], k = operands[1], v = operands[2], qpos = operands[3],
          kpos = operands[4];
    Location loc = att.getLoc();
    auto qType = cast<RankedTensorType>(q.getType());
    ArrayRef<int64_t> qs = qType.getShape();
    int64_t dv = cast<RankedTensorType>(v.getType()).getDimSize(3);
    auto outType = RankedTensorType::get({qs[0], qs[1], qs[2], dv},
                                         qType.getElementType());
    auto lseType = RankedTensorType::get({qs[0], qs[2], qs[1]}, b.getF32Type());
    // Dropout: each block draws its part of the whole sequence's mask, by
    // the positions its queries and keys hold.
    ArrayAttr split;
    if (att.getDropout())
      split = b.getArrayAttr(llvm::map_to_vector(
          rows, [&](const Axes &a) -> Attribute { return axesAttr(a); }));
    auto attend = [&](Value key, Value value, Value keyPositions) {
      auto block = AttentionOp::create(
          b, loc, outType, lseType, q, key, value, qpos, keyPositions,
          att.getStep(), att.getMicrobatch(), att.getScaleAttr(),
          att.getCausalAttr(), att.getDropoutAttr(), att.getSeedAttr(), split,
          att.getMicrobatchesAttr());
      return std::pair<Value, Value>{block.getResult(), block.getLse()};
    };
    StringAttr axis = ring.front();
    auto shift = [&](Value x) -> Value {
      return RingShiftOp::create(b, loc, x.getType(), x, meshRef, axis,
                                 b.getI64IntegerAttr(1));
    };
    int64_t n = splitCount(mesh, ring);
    std::array<Value, 3> next;
    if (n > 1)
      next = {shift(k), shift(v), shift(kpos)};
    weft::detail::Emitter e{b, loc};
    // A query that sees no key of a block has lse -inf there. Raised to
    // -1e30 it weighs nothing beside any block it sees, and a query that
    // sees none at all (possible in IR written so; never at step 0 of the
    // plan's ring, whose own block holds the diagonal) keeps its zero row
    // instead of becoming NaN in the merge.
    auto floor = [&](Value l) -> Value {
      return MaxOp::create(b, loc, l, e.splatLike(l, -1e30));
    };
    auto [out, lse] = attend(k, v, kpos);
    lse = floor(lse);
    // [B, H, S] weights as multipliers of [B, S, H, Dv] rows.
    auto rowsOf = [&](Value w) -> Value {
      Value t = TransposeOp::create(b, loc, w, ArrayRef<int64_t>{0, 2, 1});
      if (qType.getElementType() != b.getF32Type())
        t = CastOp::create(b, loc,
                           RankedTensorType::get({qs[0], qs[1], qs[2]},
                                                 qType.getElementType()),
                           t);
      return BroadcastOp::create(b, loc, outType, t,
                                 ArrayRef<int64_t>{0, 1, 2});
    };
    for (int64_t step = 1; step < n; ++step) {
      std::array<Value, 3> block = next;
      if (step + 1 < n)
        next = {shift(block[0]), shift(block[1]), shift(block[2])};
      auto [part, partLse] = attend(block[0], block[1], block[2]);
      partLse = floor(partLse);
      // lse = m + log(e^(lse - m) + e^(partLse - m)), m the larger.
      Value m = MaxOp::create(b, loc, lse, partLse);
      Value mine = ExpOp::create(b, loc, e.sub(lse, m));
      Value theirs = ExpOp::create(b, loc, e.sub(partLse, m));
      Value total = e.add(mine, theirs);
      lse = e.add(m, LogOp::create(b, loc, total));
      out = e.add(e.mul(out, rowsOf(e.div(mine, total))),
                  e.mul(part, rowsOf(e.div(theirs, total))));
    }
    layouts[out] = Layout{rows, {}, ReduceKind::Sum, varying};
    layouts[lse] = Layout{
        DimAxes{factors[0], factors[1], ring}, {}, ReduceKind::Sum, varying};
    att.getResult().replaceAllUsesWith(out);
    att.getLse().replaceAllUsesWith(lse);
    att.erase();
    return success();
  }

  LogicalResult rewrite(Operation *op) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return rewriteReturn(ret);
    if (auto att = dyn_cast<AttentionOp>(op))
      return rewriteAttention(att);
    if (auto route = dyn_cast<ExpertRouteOp>(op))
      return rewriteRoute(route);
    if (auto dispatch = dyn_cast<ExpertDispatchOp>(op))
      return rewriteDispatch(dispatch);
    if (auto gm = dyn_cast<GroupedMatmulOp>(op))
      return rewriteGroupedMatmul(gm);
    if (auto combine = dyn_cast<ExpertCombineOp>(op))
      return rewriteCombine(combine);
    if (isa<ExpertGatherOp, ExpertScatterOp, GroupedMatmulWgradOp,
            RaggedAllToAllOp>(op) &&
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return !layout(v).varying.empty(); }))
      return op->emitOpError("is not partitioned across ranks (autodiff "
                             "makes it from a partitioned forward)");
    // Rows at their experts' ranks stay there through ops on each row
    // alone (SwiGLU between the expert matmuls, their FP8 quantizations);
    // anything else takes them home.
    const Exchange *rowsAway = nullptr;
    for (OpOperand &operand : op->getOpOperands()) {
      auto it = exchanged.find(operand.get());
      if (it == exchanged.end())
        continue;
      if (rowLocal(op))
        rowsAway = &it->second;
      else
        operand.set(bringHome(op, operand.get()));
    }
    if (rowsAway)
      for (Value v : op->getOperands())
        if (!exchanged.count(v))
          return op->emitOpError("mixes rows held at their experts' ranks "
                                 "with rows that are not");
    Exchange away = rowsAway ? *rowsAway : Exchange();
    if (failed(rewriteGeneric(op)))
      return failure();
    // An elementwise op's local shape is its operand's; a row-local FP8
    // op on packed expert rows has as many rows as they (they are no block
    // of a global shape the factors could divide) and its other dimensions
    // as placed.
    bool elementwise = op->hasTrait<OpTrait::Elementwise>();
    bool onPackedRows = op->getNumOperands() > 0 &&
                        packedRows.contains(op->getOperand(0)) && rowLocal(op);
    if ((elementwise || onPackedRows) && op->getNumOperands() > 0)
      for (Value r : op->getResults()) {
        auto type = cast<RankedTensorType>(r.getType());
        auto in = cast<RankedTensorType>(op->getOperand(0).getType());
        SmallVector<int64_t> shape(in.getShape());
        if (!elementwise) {
          shape.assign(type.getShape().begin(), type.getShape().end());
          shape[0] = in.getDimSize(0);
        }
        r.setType(RankedTensorType::get(shape, type.getElementType()));
      }
    if (onPackedRows)
      packedRows.insert(op->result_begin(), op->result_end());
    if (rowsAway)
      for (Value r : op->getResults())
        exchanged[r] = away;
    return success();
  }

  /// FP8 blocks of a split value: a dimension whose one block was the whole
  /// (global) dimension is now the local one; returns the axes that split
  /// such dimensions, over which the blocks' maxima are then taken. (Tiles
  /// are never cut: the sharding rule's granules split between them.)
  Axes localizeBlock(SmallVectorImpl<int64_t> &block, Value v) {
    ArrayRef<int64_t> local = cast<RankedTensorType>(v.getType()).getShape();
    Axes axes;
    for (auto [d, split] : llvm::enumerate(layout(v).dims)) {
      if (split.empty() || block[d] != local[d] * splitCount(mesh, split))
        continue;
      block[d] = local[d];
      axes.append(split.begin(), split.end());
    }
    return axes;
  }

  /// An FP8 gradient mark on a split value: its gradient's blocks, and a
  /// backward re-quantization's, localised (localizeBlock), their axes
  /// recorded for the gradient's maxima.
  void recordAmaxAxes(Fp8QuantizeGradOp mark) {
    SmallVector<int64_t> block(mark.getBlock());
    Axes axes = localizeBlock(block, mark.getResult());
    mark.setBlock(block);
    recordBackwardAxes(mark);
    if (axes.empty())
      return;
    mark->setAttr(kAmaxAxesAttr, axesAttr(axes));
    mark->setAttr(kAmaxMeshAttr, meshRef);
  }

  /// A backward re-quantization's blocks (weft.fp8_quantize's or
  /// weft.fp8_quantize_grad's backward_block) localised, their axes
  /// recorded as kBackwardAmaxAxesAttr.
  template <typename Fp8Op> void recordBackwardAxes(Fp8Op op) {
    std::optional<ArrayRef<int64_t>> backward = op.getBackwardBlock();
    if (!backward)
      return;
    SmallVector<int64_t> block(*backward);
    Axes axes = localizeBlock(block, op.getResult());
    op.setBackwardBlock(block);
    if (axes.empty())
      return;
    op->setAttr(kBackwardAmaxAxesAttr, axesAttr(axes));
    op->setAttr(kAmaxMeshAttr, meshRef);
  }

  /// In a function nothing differentiates (the optimizer step), a sum or
  /// difference of two terms partial over the same axes, laid out alike,
  /// stays partial: sum_r a_r + sum_r b_r = sum_r (a_r + b_r) (and so for
  /// means), so one all-reduce combines the whole chain where it is read
  /// (the global norm's per-tensor squares under ZeRO-2: one all-reduce,
  /// not one a tensor). Fails, changing nothing, for any other op.
  LogicalResult keepPartial(Operation *op) {
    if (differentiable || !isa<AddOp, SubOp>(op))
      return failure();
    // Copies: define() below adds to the map the references would be into.
    Layout x = layout(op->getOperand(0)), y = layout(op->getOperand(1));
    if (x.partial.empty() || x.partial != y.partial ||
        x.partialKind != y.partialKind || x.partialKind == ReduceKind::Max ||
        x.dims != y.dims)
      return failure();
    AxisSet varying = x.varying;
    varying.insert(y.varying.begin(), y.varying.end());
    Value r = op->getResult(0);
    define(r, x.dims, varying);
    layout(r).partial = x.partial;
    layout(r).partialKind = x.partialKind;
    return success();
  }

  LogicalResult rewriteGeneric(Operation *op) {
    if (auto param = dyn_cast<ParamOp>(op))
      return rewriteParam(param);
    if (auto assign = dyn_cast<AssignOp>(op))
      return rewriteAssign(assign);
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      if (scatterAnnotated(reduce))
        return success();
    if (auto constant = dyn_cast<ConstantOp>(op))
      return rewriteConstant(constant);
    if (succeeded(keepPartial(op)))
      return success();
    ShardingRule rule;
    if (auto it = rules.find(op); it != rules.end()) {
      rule = it->second;
    } else {
      // Placed whole: every dimension of every value is its own unsplit
      // dimension.
      for (Value v : op->getOperands())
        rule.operands.emplace_back(
            cast<RankedTensorType>(v.getType()).getRank(),
            ShardingRule::kWhole);
      for (Value v : op->getResults())
        rule.results.emplace_back(cast<RankedTensorType>(v.getType()).getRank(),
                                  ShardingRule::kWhole);
    }
    SmallVector<Axes> factors = factorAxes(op, rule);
    auto dimsOf = [&](ArrayRef<int64_t> map) {
      DimAxes dims;
      for (int64_t f : map)
        dims.push_back(f == ShardingRule::kWhole ? Axes() : factors[f]);
      return dims;
    };

    AxisSet varying;
    for (const Axes &axes : factors)
      varying.insert(axes.begin(), axes.end());
    SmallVector<Value> operands;
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(op->getOperands(), rule.operands))) {
      FailureOr<Value> v =
          reshard(op, i, std::get<0>(pair), dimsOf(std::get<1>(pair)));
      if (failed(v))
        return failure();
      operands.push_back(*v);
      varying.insert(layout(*v).varying.begin(), layout(*v).varying.end());
    }
    for (auto [i, v] : llvm::enumerate(operands))
      op->setOperand(i, differentiable ? enterVarying(op, v, varying) : v);

    Axes partial;
    for (auto [f, axes] : llvm::enumerate(factors))
      if (rule.isReduction(f))
        partial.append(axes.begin(), axes.end());
    // A split vocabulary: the op reads its block of it (weft.vocab_axes).
    if (rule.vocabFactor != ShardingRule::kWhole &&
        !factors[rule.vocabFactor].empty())
      op->setAttr(kVocabAxesAttr, axesAttr(factors[rule.vocabFactor]));
    // A factor the op combines itself leaves its result the same on every
    // rank of that factor's axes.
    for (int64_t f : rule.selfCombined)
      for (StringAttr axis : factors[f])
        varying.remove(axis);
    for (auto [r, map] : llvm::zip(op->getResults(), rule.results)) {
      define(r, dimsOf(map), varying);
      layout(r).partial = partial;
      layout(r).partialKind = rule.meanReduction  ? ReduceKind::Mean
                              : rule.maxReduction ? ReduceKind::Max
                                                  : ReduceKind::Sum;
    }
    if (auto mark = dyn_cast<Fp8QuantizeGradOp>(op))
      recordAmaxAxes(mark);
    if (auto q = dyn_cast<Fp8QuantizeOp>(op))
      recordBackwardAxes(q);
    // A split dropout draws its block of the global tensor's mask (an
    // attention's, of its probabilities: batch and heads as its result's).
    if (isa<DropoutOp>(op) ||
        (isa<AttentionOp>(op) && cast<AttentionOp>(op).getDropout())) {
      const DimAxes &dims = layout(op->getResult(0)).dims;
      if (llvm::any_of(dims, [](const Axes &a) { return !a.empty(); }))
        op->setAttr("split", b.getArrayAttr(llvm::map_to_vector(
                                 dims, [&](const Axes &a) -> Attribute {
                                   return axesAttr(a);
                                 })));
    }
    // Attributes that spell out sizes follow the local shapes.
    if (auto slice = dyn_cast<SliceOp>(op)) {
      SmallVector<int64_t> limits(slice.getLimits());
      for (auto [d, axes] : llvm::enumerate(layout(slice.getResult()).dims))
        if (!axes.empty())
          limits[d] = slice.getType().getDimSize(d);
      slice.setLimits(limits);
    }
    return success();
  }

  /// A parameter split for computation (its `weft.sharding`, e.g. tensor
  /// parallel) is used as its block. One split only for storage (ZeRO-3's
  /// `weft.zero_shard`) is all-gathered where it is declared, just before
  /// its first use; the gather's gradient reduce-scatters the gradient, so
  /// each rank updates its block. Both record the block on the op as
  /// `weft.shard_of` for the runtime.
  LogicalResult rewriteParam(ParamOp param) {
    Value value = param.getResult();
    auto storage = param->getAttrOfType<ShardingAttr>(kZeroShardAttr);
    DimAxes compute = readDims(value);
    DimAxes stored =
        storage ? readDims(value, storage) : DimAxes(compute.size());
    // What each rank holds: the computation's split, and ZeRO-3's on top.
    DimAxes dims = compute;
    for (auto [d, axes] : llvm::enumerate(stored)) {
      if (!axes.empty() && !dims[d].empty())
        return param.emitOpError("dimension ")
               << d << " is split both for computation and by ZeRO-3";
      dims[d].append(axes.begin(), axes.end());
    }
    define(value, dims);
    paramDims[param.getName()] = dims;
    if (!isReplicated(dims))
      param->setAttr(kShardOfAttr, toAttr(param.getContext(), meshRef, dims));
    param->removeAttr(kZeroShardAttr);
    if (!storage)
      return success();
    // A master weight cast to the compute type is cast on its block and
    // gathered in the compute type (half the bytes in bf16, as FSDP's mixed
    // precision does).
    Value source = value;
    Operation *after = param;
    if (value.hasOneUse())
      if (auto castOp = dyn_cast<CastOp>(*value.getUsers().begin())) {
        source = castOp.getResult();
        define(source, dims);
        created.insert(castOp);
        after = castOp;
      }
    b.setInsertionPointAfter(after);
    Value full = source;
    for (auto [d, axes] : llvm::enumerate(stored)) {
      if (axes.empty())
        continue;
      auto type = cast<RankedTensorType>(full.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] *= splitCount(mesh, axes);
      auto gather = AllGatherOp::create(
          b, param.getLoc(),
          RankedTensorType::get(shape, type.getElementType()), full, meshRef,
          axesAttr(axes), b.getI64IntegerAttr(d));
      created.insert(gather);
      full = gather.getResult();
    }
    source.replaceAllUsesExcept(full, full == source ? nullptr
                                                     : gatherChainStart(full));
    Layout l = layout(source);
    l.dims = compute;
    layouts[full] = l;
    return success();
  }

  /// A parameter's new value is laid out as the parameter is held (a block
  /// of ZeRO's optimizer state stays a block; a whole parameter updated in
  /// blocks is all-gathered).
  LogicalResult rewriteAssign(AssignOp assign) {
    auto held = paramDims.find(assign.getName());
    if (held == paramDims.end())
      return assign.emitOpError("assigns '")
             << assign.getName() << "', which no earlier weft.param declares";
    FailureOr<Value> v = reshard(assign, 0, assign.getValue(), held->second);
    if (failed(v))
      return failure();
    assign.getValueMutable().assign(*v);
    return success();
  }

  /// An all-reduce (sum or mean, one operand) whose result is annotated
  /// split along one dimension over exactly its own axes reduce-scatters
  /// there instead (ZeRO-2's gradients): each rank gets only its block of
  /// the sum. Discardable attributes move to the new op. Returns whether it
  /// rewrote `reduce`.
  bool scatterAnnotated(AllReduceOp reduce) {
    if (reduce.getInputs().size() != 1 ||
        (reduce.getReduction() != ReduceKind::Sum &&
         reduce.getReduction() != ReduceKind::Mean))
      return false;
    Value result = reduce.getResult(0);
    DimAxes want = readDims(result);
    std::optional<size_t> dim;
    for (auto [d, axes] : llvm::enumerate(want))
      if (!axes.empty()) {
        if (dim)
          return false;
        dim = d;
      }
    if (!dim || axesAttr(want[*dim]) != reduce.getAxes())
      return false;
    Value in = combine(reduce, reduce.getInputs()[0]);
    Layout l = layout(in);
    if (!isReplicated(l.dims))
      return false;
    l.varying.insert(want[*dim].begin(), want[*dim].end());
    Value out = scatter(reduce, in, l, *dim, want[*dim],
                        reduce.getReduction() == ReduceKind::Mean);
    out.getDefiningOp()->setDiscardableAttrs(
        reduce->getDiscardableAttrDictionary());
    result.replaceAllUsesWith(out);
    reduce.erase();
    return true;
  }

  /// The first all_gather of a chain ending in `last` (its operand is the
  /// parameter itself).
  static Operation *gatherChainStart(Value last) {
    Operation *op = last.getDefiningOp();
    while (auto prev = op->getOperand(0).getDefiningOp<AllGatherOp>())
      op = prev;
    return op;
  }

  LogicalResult rewriteConstant(ConstantOp constant) {
    DimAxes dims = readDims(constant.getResult());
    if (!isReplicated(dims)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense || !dense.isSplat())
        return constant.emitOpError(
            "only a splat constant can be split across ranks");
      define(constant.getResult(), dims);
      constant.setValueAttr(
          dense.resizeSplat(cast<ShapedType>(constant.getResult().getType())));
      return success();
    }
    define(constant.getResult(), dims);
    return success();
  }

  LogicalResult rewriteReturn(func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      Value v = combine(ret, operand.get());
      auto name = func.getResultAttrOfType<StringAttr>(i, "weft.output");
      if (name && name.getValue() == "loss") {
        // Every rank must report (and differentiate) the same loss. A value
        // still varying here is the same on every rank by construction, so
        // its mean is itself, and the mean's gradient undoes the extra
        // contributions its uses would otherwise sum.
        Layout l = layout(v);
        if (!l.varying.empty()) {
          Axes axes(l.varying.begin(), l.varying.end());
          auto mean = ReduceKindAttr::get(b.getContext(), ReduceKind::Mean);
          v = AllReduceOp::create(b, ret.getLoc(), mean, ValueRange{v}, meshRef,
                                  axesAttr(axes))
                  .getResult(0);
        }
      } else if (!isReplicated(layout(v).dims)) {
        func.setResultAttr(i, kShardingAttr,
                           toAttr(func.getContext(), meshRef, layout(v).dims));
      }
      operand.set(v);
    }
    return success();
  }

  /// Factor axes as propagation chose them (results carry that choice);
  /// a factor that reaches a result but was left unsplit there stays
  /// unsplit, so only reduction and self-combined factors take their split
  /// from operands.
  SmallVector<Axes> factorAxes(Operation *op, const ShardingRule &rule) {
    SmallVector<Axes> factors =
        chooseFactorAxes(op, rule, [&](Value v, bool isResult) {
          return isResult ? readDims(v) : layout(v).dims;
        });
    for (auto [f, axes] : llvm::enumerate(factors))
      if ((!rule.isReduction(f) &&
           !llvm::is_contained(rule.selfCombined, static_cast<int64_t>(f)) &&
           !isResultSplit(op, rule, f)) ||
          // A split a neighbour's rule spread here that would cut the
          // factor's granules (an FP8 tile): the operands are resharded.
          !rule.splits(f, rule.factorSizes[f], splitCount(mesh, axes)))
        axes.clear();
    return factors;
  }

  static bool isResultSplit(Operation *op, const ShardingRule &rule,
                            int64_t factor) {
    for (auto [v, map] : llvm::zip(op->getResults(), rule.results)) {
      DimAxes dims = readDims(v);
      for (auto [d, f] : llvm::enumerate(map))
        if (f == factor && !dims[d].empty())
          return true;
    }
    return false;
  }

  func::FuncOp func;
  MeshOp mesh;
  bool differentiable;
  FlatSymbolRefAttr meshRef;
  OpBuilder b;
  llvm::DenseMap<Value, Layout> layouts;
  llvm::DenseMap<Operation *, ShardingRule> rules;
  llvm::DenseMap<std::pair<Value, Attribute>, Value> copies, reshards,
      exchanges;
  llvm::DenseMap<Value, Exchange> exchanged; // Rows at their experts' ranks.
  llvm::DenseMap<Value, Value> homes;        // Such rows brought back.
  // Quantizations of expert rows made again at the experts' ranks
  // (exchangeInput), keyed by the one at home and the axes.
  llvm::DenseMap<std::pair<Value, Attribute>, Value> requantized;
  SmallVector<Fp8QuantizeOp> homeQuantizations;
  // Packed expert rows, at home or away: dispatched, exchanged, grouped
  // GEMMs' results and row-local ops' on them.
  llvm::DenseSet<Value> packedRows;
  llvm::DenseSet<Operation *> created;
  llvm::StringMap<DimAxes> paramDims; // How each parameter is held.
};
} // namespace

LogicalResult weft::partition(func::FuncOp func, bool differentiable) {
  MeshOp mesh = findMesh(func);
  if (!mesh)
    return success(); // Nothing is split: the program is every rank's.
  return Partitioner(func, mesh, differentiable).run();
}

namespace {
struct PartitionPass : weft::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    if (failed(partition(getOperation())))
      signalPassFailure();
  }
};
} // namespace

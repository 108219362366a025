//===- Fp8Gather.cpp - gather FP8 values after quantizing -----------------===//
//
// Partitioning gathers a split tensor whole where its FP8 quantization
// reads it whole: a ZeRO-3 weight, a tensor-parallel weight or a
// sequence-parallel activation whose scale blocks span the split. Each
// block of the gathered tensor is then either
//  - one block along the gathered dimension (a per-tensor scale; a
//    row-wise weight contracted along it): its maximum is the largest of
//    the shards' maxima, max all-reduced over the gather's axes, or
//  - inside one shard (a row-wise weight's rows, 128 x 128 blocks, MXFP8's
//    32-element blocks across the gathered dimension): its maximum is the
//    shard's own, and the shards' maxima concatenate as the shards do.
// Either way the quantization may run on each shard first, by those
// maxima, and the gathered quantized values are the same to the bit; what
// moves is the quantized tensor, which FP8 storage moves as one byte an
// element with its scales (torchao's float8 all-gather for FSDP2 does the
// same for per-tensor scales). A block that straddles two shards keeps
// the gather where it is.
//
// A gathered weight read through views first (GPT-2's fused c_attn,
// sliced into q, k and v) has the gather sunk through them when every
// view's quantizations can move: a slice that keeps the gathered
// dimension whole, or a reshape that keeps the dimensions up to it, reads
// the shard as it reads the whole, so each view is taken of the shard and
// gathered (three gathers of a third each), then moved as above.
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Fp8Codes.h"
#include "passes/precision/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace weft {
#define GEN_PASS_DEF_FP8GATHER
#include "passes/precision/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// How a gather's dimension meets the blocks of a maximum's grid.
enum class Cut {
  Spans,     // One block along the whole dimension.
  Inside,    // Every block inside one shard.
  Straddles, // Some block across two shards.
};

/// A gathered value: a gather's result, or a view of it that a gather
/// of the shard's view would make (sinkable).
struct Gathered {
  Value value;
  int64_t dim, whole, shard; // The gathered dimension and its sizes.

  explicit Gathered(AllGatherOp g)
      : value(g.getResult()), dim(g.getDim()),
        whole(g.getResult().getType().getDimSize(g.getDim())),
        shard(g.getInput().getType().getDimSize(g.getDim())) {}
  Gathered(Value v, int64_t dim, int64_t shard)
      : value(v), dim(dim),
        whole(cast<ShapedType>(v.getType()).getDimSize(dim)), shard(shard) {}

  Cut cut(Value amax) const {
    int64_t blocks = cast<ShapedType>(amax.getType()).getDimSize(dim);
    if (blocks == 1)
      return Cut::Spans;
    return blocksStraddleShards(whole, shard, blocks) ? Cut::Straddles
                                                      : Cut::Inside;
  }

  /// `q`'s backward_block on the shard: a block spanning the gathered
  /// dimension spans the shard, its maxima max all-reduced over the
  /// gather's axes (set in `spans`); none when a block straddles shards.
  std::optional<SmallVector<int64_t>> shardBackward(Fp8QuantizeOp q,
                                                    bool &spans) const {
    SmallVector<int64_t> block(*q.getBackwardBlock());
    spans = block[dim] == whole;
    if (spans)
      block[dim] = shard;
    else if (shard % block[dim] != 0)
      return std::nullopt;
    return block;
  }
};

/// Whether every reader of `g`'s result is a maximum of it or a
/// quantization of it (at least one) whose blocks the gather does not
/// straddle, by a maximum of it where each block lies inside a shard.
/// An expert layer's quantization (group_rows) is re-quantized from its
/// input by the weight gradient, which a shard is not.
bool movable(const Gathered &g) {
  Value whole = g.value;
  bool quantized = false;
  for (OpOperand &use : whole.getUses()) {
    Operation *user = use.getOwner();
    if (auto amax = dyn_cast<Fp8AmaxOp>(user)) {
      if (g.cut(amax.getResult()) == Cut::Straddles)
        return false;
      continue;
    }
    auto q = dyn_cast<Fp8QuantizeOp>(user);
    if (!q || use.getOperandNumber() != 0 || q.getGroupRows())
      return false;
    switch (g.cut(q.getAmax())) {
    case Cut::Straddles:
      return false;
    case Cut::Inside:
      if (auto amax = q.getAmax().getDefiningOp<Fp8AmaxOp>();
          !amax || amax.getInput() != whole)
        return false;
      break;
    case Cut::Spans:
      break;
    }
    bool spans;
    if (q.getBackwardBlock() && !g.shardBackward(q, spans))
      return false;
    quantized = true;
  }
  return quantized;
}

/// The dimension a gather along `dim` (of `whole` elements) becomes when
/// it is sunk through `view`: a slice that keeps that dimension whole, or a
/// reshape that keeps the dimensions up to it, reads a shard as it reads
/// the whole. None for any other reader.
std::optional<int64_t> sunkDim(Operation *view, int64_t dim, int64_t whole) {
  if (auto slice = dyn_cast<SliceOp>(view)) {
    if (slice.getStarts()[dim] == 0 && slice.getLimits()[dim] == whole)
      return dim;
    return std::nullopt;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(view)) {
    ArrayRef<int64_t> in = reshape.getInput().getType().getShape(),
                      out = reshape.getResult().getType().getShape();
    if (static_cast<int64_t>(out.size()) > dim &&
        in.take_front(dim + 1) == out.take_front(dim + 1))
      return dim;
  }
  return std::nullopt;
}

/// Whether every reader of `g` is a view the gather sinks through, each
/// leading to quantizations that move (movable) or to more such views.
bool sinkable(const Gathered &g) {
  if (g.value.use_empty())
    return false;
  for (Operation *user : g.value.getUsers()) {
    std::optional<int64_t> dim = sunkDim(user, g.dim, g.whole);
    if (!dim)
      return false;
    Gathered viewed(user->getResult(0), *dim, g.shard);
    if (!movable(viewed) && !sinkable(viewed))
      return false;
  }
  return true;
}

/// Sinks `gather` through its views (sinkable), appending the gathers
/// whose quantizations then move to `movers`.
void sink(AllGatherOp gather, SmallVectorImpl<AllGatherOp> &movers) {
  Value shard = gather.getInput();
  for (Operation *view : llvm::to_vector(gather.getResult().getUsers())) {
    OpBuilder b(view);
    int64_t dim =
        *sunkDim(view, gather.getDim(),
                 gather.getResult().getType().getDimSize(gather.getDim()));
    auto type = cast<RankedTensorType>(view->getResult(0).getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = cast<ShapedType>(shard.getType()).getDimSize(gather.getDim());
    auto shardType = RankedTensorType::get(shape, type.getElementType());
    Operation *part;
    if (auto slice = dyn_cast<SliceOp>(view)) {
      SmallVector<int64_t> limits(slice.getLimits());
      limits[dim] = shape[dim];
      part = SliceOp::create(b, view->getLoc(), shardType, shard,
                             slice.getStartsAttr(),
                             b.getDenseI64ArrayAttr(limits));
    } else {
      part = ReshapeOp::create(b, view->getLoc(), shardType, shard);
    }
    for (NamedAttribute a : view->getDiscardableAttrs())
      part->setAttr(a.getName(), a.getValue());
    auto whole = AllGatherOp::create(
        b, gather.getLoc(), type, part->getResult(0), gather.getMeshAttr(),
        gather.getAxesAttr(), b.getI64IntegerAttr(dim));
    for (NamedAttribute a : gather->getDiscardableAttrs())
      whole->setAttr(a.getName(), a.getValue());
    view->getResult(0).replaceAllUsesWith(whole.getResult());
    view->erase();
    if (movable(Gathered(whole)))
      movers.push_back(whole);
    else
      sink(whole, movers);
  }
  gather.erase();
}

void moveAfterQuantization(AllGatherOp gather) {
  Gathered g(gather);
  Value shard = gather.getInput();
  Type f32 = Float32Type::get(gather.getContext());
  auto gatherOf = [&](OpBuilder &b, Location loc, Value v, Type type) {
    auto whole = AllGatherOp::create(b, loc, type, v, gather.getMeshAttr(),
                                     gather.getAxesAttr(), gather.getDimAttr());
    for (NamedAttribute a : gather->getDiscardableAttrs())
      whole->setAttr(a.getName(), a.getValue());
    return whole.getResult();
  };
  // The maxima first: a quantization may read one of them. Each becomes
  // the shard's, and the whole's is made from them for any other reader
  // (a gather of maxima nothing reads is erased below).
  llvm::DenseMap<Value, Value> shardMaxima; // The whole's -> the shard's.
  for (Operation *user : llvm::to_vector(gather.getResult().getUsers())) {
    auto amax = dyn_cast<Fp8AmaxOp>(user);
    if (!amax)
      continue;
    OpBuilder b(amax);
    auto type = cast<RankedTensorType>(amax.getResult().getType());
    bool spans = g.cut(amax.getResult()) == Cut::Spans;
    SmallVector<int64_t> grid(type.getShape());
    if (!spans)
      grid[g.dim] = grid[g.dim] / (g.whole / g.shard);
    auto local = Fp8AmaxOp::create(b, amax.getLoc(),
                                   RankedTensorType::get(grid, f32), shard);
    // Delayed scaling's history name stays on the maximum; its scales are
    // per tensor, so it spans the gather and the recorder reads it after
    // the all-reduce.
    local->setAttrs(amax->getAttrs());
    Value whole;
    if (spans) {
      auto reduce = AllReduceOp::create(
          b, amax.getLoc(),
          ReduceKindAttr::get(b.getContext(), ReduceKind::Max),
          ValueRange{local.getResult()}, gather.getMeshAttr(),
          gather.getAxesAttr());
      // Under a pipeline (weft-gather-per-step's @gather), on its stage.
      if (Attribute stage = amax->getAttr(kStageAttr))
        reduce->setAttr(kStageAttr, stage);
      whole = reduce.getResult(0);
    } else {
      whole = gatherOf(b, amax.getLoc(), local.getResult(), type);
    }
    shardMaxima[whole] = spans ? whole : local.getResult();
    amax.getResult().replaceAllUsesWith(whole);
    amax.erase();
  }
  for (Operation *user : llvm::to_vector(gather.getResult().getUsers())) {
    auto q = cast<Fp8QuantizeOp>(user);
    OpBuilder b(q);
    Value amax = q.getAmax();
    if (g.cut(amax) == Cut::Inside)
      amax = shardMaxima.lookup(amax);
    DenseI64ArrayAttr backward;
    bool spans = false;
    if (q.getBackwardBlock())
      backward = b.getDenseI64ArrayAttr(*g.shardBackward(q, spans));
    auto local = Fp8QuantizeOp::create(
        b, q.getLoc(), shard.getType(), shard, amax, q.getFormatAttr(),
        q.getPow2ScalesAttr(), backward, /*group_rows=*/nullptr);
    for (NamedAttribute a : q->getDiscardableAttrs())
      local->setAttr(a.getName(), a.getValue());
    // The backward's re-quantization of the shard takes its maxima over
    // the ranks a block now spans too (fp8ForBackward).
    if (spans) {
      SmallVector<Attribute> axes;
      if (auto had = q->getAttrOfType<ArrayAttr>(kBackwardAmaxAxesAttr))
        axes.append(had.begin(), had.end());
      axes.append(gather.getAxesAttr().begin(), gather.getAxesAttr().end());
      local->setAttr(kBackwardAmaxAxesAttr, b.getArrayAttr(axes));
      local->setAttr(kAmaxMeshAttr, gather.getMeshAttr());
    }
    q.getResult().replaceAllUsesWith(
        gatherOf(b, gather.getLoc(), local.getResult(), q.getType()));
    q.erase();
  }
  for (auto [whole, local] : shardMaxima)
    if (whole != local && whole.use_empty())
      whole.getDefiningOp()->erase();
  gather.erase();
}

/// Whether `gather` gathers a parameter (through a cast).
bool gathersParam(AllGatherOp gather) {
  Value v = gather.getInput();
  if (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v.getDefiningOp<ParamOp>() != nullptr;
}

struct Fp8GatherPass : weft::impl::Fp8GatherBase<Fp8GatherPass> {
  using Fp8GatherBase::Fp8GatherBase;
  void runOnOperation() override {
    if (!func.empty() && getOperation().getSymName() != func)
      return;
    SmallVector<AllGatherOp> movers, sunk;
    getOperation().walk([&](AllGatherOp op) {
      Gathered g(op);
      if (!params && gathersParam(op))
        return;
      if (movable(g))
        movers.push_back(op);
      else if (sinkable(g))
        sunk.push_back(op);
    });
    for (AllGatherOp op : sunk)
      sink(op, movers);
    for (AllGatherOp op : movers)
      moveAfterQuantization(op);
  }
};
} // namespace

//===- Fp8Storage.cpp - FP8 GEMM operands kept as FP8 codes ---------------===//
//
// weft-fp8 writes an FP8 GEMM as weft.matmul over weft.fp8_quantize's
// dequantized values (f32, or a bf16 model's bf16), which the evaluator
// and the CPU compute exactly.
// A GPU multiplies FP8 itself: cuBLASLt reads FP8 operands with one f32
// scale each. Here a per-tensor quantization whose every reader is such a
// GEMM (through reshapes) becomes sched.fp8_cast, writing one byte an
// element and the factor 1 / s, and its GEMMs sched.gemm with FP8
// operands and scales; the values are never written (a bf16 input is read
// as stored, with no widened copy). cuBLASLt reads
// FP8 only with k contiguous in both operands (A [m, k], B [n, k]), so a
// value is cast once per layout its GEMMs need, transposed where the
// matmul reads it transposed the other way, as Transformer Engine keeps
// row- and column-wise FP8 copies of a tensor.
//
// A quantization weft-fp8-gather moved before a gather (a ZeRO-3 weight)
// casts its shard and gathers the codes, one byte an element. With one
// scale (every rank's the same), the shard is cast as stored and GEMMs
// that read the gathered tensor transposed get a transposing copy of the
// codes. With blocks, each shard is cast in the layout the GEMM reads the
// gathered matrix in, and its codes and scales gather into that operand's
// where the shards' blocks tile it (gathersScales).
//
// Quantizations with blocks are kept as FP8 too where cuBLASLt has a
// scale mode for them in the layout a GEMM reads (Fp8Scaling.h): row-wise
// scales as outer vectors, DeepSeek-V3's 1 x 128 tiles and 128 x 128
// blocks as VEC128 / BLK128x128 (cuBLASLt 12.9+ on Hopper), one GEMM at a
// time, paired as cuBLASLt pairs them. MXFP8's 1 x 32 blocks of E8M0
// scales have a cuBLASLt mode on Blackwell only (VEC32_UE8M0), so they
// are "vec32" here, which Weft's own kernel multiplies on any FP8 GPU
// (ops.cu's weft_fp8_block_gemm: tensor cores per 32-element block, its
// partial sums scaled in f32). A layout no mode has (a block along the
// rows of a 3-D operand read transposed, but for an expert weight's,
// below) keeps the values path.
//
// An expert layer's weft.grouped_matmul is an FP8 GEMM here too (cuBLAS's
// grouped GEMM takes no FP8; the same kernel of Weft's runs it in any
// mode): the input [N, K] by each expert's weight, k contiguous, the
// weight [E, M, K] as stored (its scales those of the matrix [E * M, K])
// or, for the input gradient, cast with each expert's matrix transposed
// on its own ([E, K, M]). The expert weight gradient sums each group's
// rows: it reads its operands quantized again in tiles of an expert's rows
// (weft.fp8_group_quantize), which become transposed, expert-major codes
// with a scale per tile and column (sched.fp8_group_cast) for
// grouped_matmul_wgrad on codes (lowerFp8GroupCast). A weight gradient
// reading a quantization directly (IR whose quantizations have no
// group_rows: weft-fp8 marks every expert layer's, so only hand-written IR
// does) has no blocks that follow its sums: that quantization keeps its
// values beside its codes for it (Fp8Plan::keepValues).
//
// A quantization only all-gathers read (weft-gather-per-step's weight
// quantized once a step, a sequence-parallel activation read as values)
// is encoded (sched.fp8_encode), its codes gathered, and decoded on arrival
// (sched.fp8_decode). Where the gathered values are weft-gather-per-step's
// state (weft::fp8CodeStates), the state holds the codes themselves: half
// a bf16 weight's bytes for the step. @accumulate's quantizations of that
// state by its maxima would give back those codes, so its GEMMs read them
// in every layout: as they are, or a transposing copy (an element's code
// depends on its block's scale alone), with that layout's scales from the
// maxima (sched.fp8_scale_inv); a reader of the values gets them decoded.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"
#include "passes/precision/Fp8Codes.h"
#include "runtime/support/Fp8Scaling.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <tuple>

using namespace mlir;

namespace weft::codegen {
namespace {

/// The lhs, rhs and transposes of a matmul; `grouped` for an expert
/// layer's weft.grouped_matmul (lhs the input [N, K], rhs the weight
/// [E, K, M] or, transposed, [E, M, K]).
struct GemmOperands {
  Value lhs, rhs;
  bool transLhs = false, transRhs = false;
  bool grouped = false;
};

/// A plain weft.matmul's or a grouped_matmul's operands. Epilogue GEMMs
/// are not FP8 GEMMs here: cuBLASLt's epilogues with FP8 operands have
/// type rules of their own (bias types, the GELU aux) no GPU has checked
/// yet, and weft-gemm-epilogue leaves GEMMs of per-tensor FP8 operands
/// plain.
std::optional<GemmOperands> gemmOperands(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op))
    return GemmOperands{mm.getLhs(), mm.getRhs(), mm.getTransposeLhs(),
                        mm.getTransposeRhs()};
  if (auto g = dyn_cast<GroupedMatmulOp>(op))
    return GemmOperands{g.getInput(), g.getWeight(), false, g.getTransposeRhs(),
                        /*grouped=*/true};
  return std::nullopt;
}

/// cuBLASLt's FP8 GEMMs take m, n and k in multiples of 16 (as
/// torch._scaled_mm requires) and write f32 or bf16. Weft's grouped FP8
/// kernel takes any m and n and k in 32-element blocks.
bool fitsFp8Gemm(Operation *op, const GemmOperands &g) {
  ArrayRef<int64_t> a = cast<ShapedType>(g.lhs.getType()).getShape(),
                    b = cast<ShapedType>(g.rhs.getType()).getShape();
  size_t ar = a.size(), br = b.size();
  int64_t m = g.transLhs ? a[ar - 1] : a[ar - 2],
          k = g.transLhs ? a[ar - 2] : a[ar - 1],
          n = g.transRhs ? b[br - 2] : b[br - 1];
  // A batch by one weight is one GEMM of B·M rows (Matmul.cpp's layout).
  if (br == 2 && !g.transLhs)
    m = cast<ShapedType>(g.lhs.getType()).getNumElements() / k;
  Type out = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  if (!out.isF32() && !out.isBF16())
    return false;
  return g.grouped ? k % 32 == 0 : m % 16 == 0 && n % 16 == 0 && k % 16 == 0;
}

/// One GEMM, not a batch of them (block scales take one matrix).
bool singleGemm(const GemmOperands &g) {
  auto rank = [](Value v) { return cast<ShapedType>(v.getType()).getRank(); };
  return rank(g.rhs) == 2 && (rank(g.lhs) == 2 || !g.transLhs);
}

/// The scale modes (a mask of WEFT_FP8_SCALE_* bits) an FP8 GEMM (cuBLASLt
/// or Weft's kernel) could read quantization `q` in as GEMM operand `v` (a
/// view of it) in layout `transposed`: the operand is [rows, k] with k
/// contiguous, v's last dimension as stored, its first of two transposed; with
/// `batched`, each matrix of v's last two dimensions transposed on its own (an
/// expert weight [E, M, K] as [E, K, M], the operand [E * K, M]). 0 when none
/// can.
int scaleModesOf(Fp8QuantizeOp q, Value v, bool transposed, bool batched) {
  ArrayRef<int64_t> shape = q.getResult().getType().getShape(),
                    grid = q.getAmax().getType().getShape(),
                    view = cast<ShapedType>(v.getType()).getShape();
  // One scale fits any layout (a batch read transposed too); the blocks
  // of a matrix may fit more modes as well (a 128 x 128 weight is one
  // 128 x 128 block).
  int tensor =
      ShapedType::getNumElements(grid) == 1 ? 1 << WEFT_FP8_SCALE_TENSOR : 0;
  long blockRows = 0, blockCols = 0;
  if (shape.empty() || view.empty() || view.back() != shape.back() ||
      !weft_fp8_matrix_blocks(shape.data(), grid.data(),
                              static_cast<int>(shape.size()), &blockRows,
                              &blockCols))
    return tensor;
  int64_t cols = shape.back(), rows = ShapedType::getNumElements(shape) / cols;
  if (!transposed)
    return tensor | weft_fp8_scale_modes_of(rows, cols, blockRows, blockCols);
  // Each matrix [r, cols] transposes on its own: its blocks lie inside it.
  int64_t r = view.size() < 2 ? 0 : view[view.size() - 2];
  if ((view.size() != 2 && !batched) || r == 0 || r % blockRows != 0)
    return tensor;
  return tensor |
         weft_fp8_scale_modes_of(rows / r * cols, r, blockCols, blockRows);
}

/// Appends the GEMMs reading `v` (through reshapes, casts between float
/// types, and at most one gather, `gather` once past it, which it records
/// in `views`) to `uses`; false if anything else reads it. A GEMM reading a
/// float cast of the values reads the codes and scales instead. A GPU gathers
/// FP8 codes as 4-byte words: a shard of another size keeps its values.
/// With `keepValues`, an expert weight gradient reading `v` itself is no
/// GEMM on codes (its sum over each expert's rows has no fixed block to
/// scale) but reads the values, which are then kept too: *keepValues says
/// whether one does.
bool collectGemmUses(Value v,
                     SmallVectorImpl<std::pair<Value, Fp8GemmUse>> &uses,
                     SmallVectorImpl<Operation *> &views,
                     AllGatherOp gather = AllGatherOp(),
                     bool *keepValues = nullptr) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (keepValues && isa<GroupedMatmulWgradOp>(user)) {
      *keepValues = true;
      continue;
    }
    if (isa<ReshapeOp>(user) ||
        (isa<CastOp>(user) &&
         isWeftFloat(getElementTypeOrSelf(user->getResult(0).getType())))) {
      views.push_back(user);
      if (!collectGemmUses(user->getResult(0), uses, views, gather))
        return false;
      continue;
    }
    if (auto next = dyn_cast<AllGatherOp>(user)) {
      views.push_back(next);
      if (gather || next.getInput().getType().getNumElements() % 4 != 0 ||
          !collectGemmUses(next.getResult(), uses, views, next))
        return false;
      continue;
    }
    std::optional<GemmOperands> g = gemmOperands(user);
    if (!g || g->lhs == g->rhs || (v != g->lhs && v != g->rhs) ||
        !fitsFp8Gemm(user, *g))
      return false;
    bool lhs = v == g->lhs;
    uses.push_back(
        {v, Fp8GemmUse{user, lhs, lhs ? g->transLhs : !g->transRhs, gather}});
  }
  return true;
}

/// Whether a gathered use reads the shard cast as stored, gathered, then
/// transposed, rather than cast in its own layout: 128 x 128 blocks read
/// transposed, which are the stored blocks transposed (each rank's scales
/// gather as stored, where a shard along the padded rows of scales need
/// not fill them).
bool gathersAsStored(const Fp8GemmUse &use) {
  return use.scaleMode == WEFT_FP8_SCALE_BLK128 && use.transposed;
}

/// The dimension of a gathered use's codes (0 or 1: the layout they are
/// cast in, [rows, k]) along which the shards lie.
int64_t gatheredDim(const Fp8GemmUse &use) {
  AllGatherOp gather = use.gather; // Its accessors are not const.
  int64_t dim = gather.getDim();
  return use.transposed && !gathersAsStored(use) ? 1 - dim : dim;
}

/// Whether shards of an operand [rows, k] (each rank's), scaled by `mode`
/// and lying along its dimension `dim`, gather into the whole operand with
/// their scales, the scale buffers gathered as weft_fp8_scale_grid's grids.
/// A row's one scale along k must be the same on every rank
/// (`sameScales`); 128 x 128 blocks' rows of scales are padded to 4, so
/// shards along k must fill theirs; shards along the rows must hold whole
/// 128-row blocks.
bool gathersScales(int mode, int64_t dim, int64_t rows, int64_t k,
                   bool sameScales) {
  switch (mode) {
  case WEFT_FP8_SCALE_ROWS:
    return dim == 0 || sameScales;
  case WEFT_FP8_SCALE_VEC128:
  case WEFT_FP8_SCALE_VEC32:
    return true;
  case WEFT_FP8_SCALE_BLK128:
    return dim == 0 ? rows % 128 == 0 : k / 128 % 4 == 0;
  default:
    return false;
  }
}

/// The scale modes a GEMM could read `v`, a view of the gathered values of
/// quantization `q` (of one shard), in: one scale in any layout where every
/// rank's is the same (weft-fp8-gather all-reduces a per-tensor maximum;
/// a shard whose one block is its own has its own); blocks where the GEMM
/// reads the gathered matrix itself, each shard cast in the GEMM's layout
/// (scaleModesOf the shard; as stored where gathersAsStored), when the
/// shards' codes and scales gather into the operand's (gathersScales).
int gatheredScaleModes(Fp8QuantizeOp q, Value v, const Fp8GemmUse &use) {
  AllGatherOp gather = use.gather;
  llvm::SmallPtrSet<Value, 8> seen;
  bool sameScales = sameOnEveryRank(q.getAmax(), gather.getAxesAttr(), seen);
  ArrayRef<int64_t> grid = q.getAmax().getType().getShape();
  int tensor = ShapedType::getNumElements(grid) == 1 && sameScales
                   ? 1 << WEFT_FP8_SCALE_TENSOR
                   : 0;
  if (v != gather.getResult() || q.getResult().getType().getRank() != 2)
    return tensor;
  ArrayRef<int64_t> shape = q.getResult().getType().getShape();
  int shard = scaleModesOf(q, q.getResult(), use.transposed, false),
      stored = scaleModesOf(q, q.getResult(), false, false);
  for (int mode = WEFT_FP8_SCALE_TENSOR + 1; mode < WEFT_FP8_SCALE_MODES;
       ++mode) {
    Fp8GemmUse as = use;
    as.scaleMode = mode;
    // The layout the shard is cast in.
    bool transposed = use.transposed && !gathersAsStored(as);
    int64_t rows = transposed ? shape[1] : shape[0],
            k = transposed ? shape[0] : shape[1];
    if ((shard >> mode & 1) && (!gathersAsStored(as) || (stored >> mode & 1)) &&
        gathersScales(mode, gatheredDim(as), rows, k, sameScales))
      tensor |= 1 << mode;
  }
  return tensor;
}

/// The transposing copy of FP8 codes [..., R, C] into [..., C, R].
Value transposeCodes(ProgramLowering &l, Location loc, Value from,
                     ArrayRef<int64_t> shape, Type format) {
  OpBuilder &b = l.builder();
  SmallVector<int64_t> outShape(shape);
  std::swap(outShape[outShape.size() - 2], outShape.back());
  Value to = l.alloc(outShape, format);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  int64_t batch = ShapedType::getNumElements(shape) / (rows * cols);
  sched::CopyOp::create(
      b, loc, from, to, b.getDenseI64ArrayAttr({batch, rows, cols}),
      b.getDenseI64ArrayAttr({0, rows * cols, cols, 1}),
      b.getDenseI64ArrayAttr({0, rows * cols, 1, rows}), FlatSymbolRefAttr(),
      ArrayAttr(), IntegerAttr(), b.getStringAttr("compute"));
  return to;
}

/// Block scales through a gather: `shard`, a shard cast as the operand
/// `part` (in the layout of the GEMM's operand, or as stored:
/// gathersAsStored), has its codes and scales (each a grid of
/// weft_fp8_scale_grid's) gathered into the operand `whole` along its
/// dimension `dim`, the one the shards lie along (planFp8Storage checked
/// they tile it: gathersScales).
Fp8Operand gatherBlocks(ProgramLowering &l, AllGatherOp gather,
                        const Fp8Operand &shard, ArrayRef<int64_t> part,
                        ArrayRef<int64_t> whole, int64_t dim, Type format) {
  Fp8Operand o = shard;
  o.codes = l.alloc(whole, format);
  gatherInto(l, gather.getLoc(), gather.getAxesAttr(), whole, dim, shard.codes,
             o.codes);
  // One scale a row along k: every rank's (gathersScales).
  if (shard.scaleMode == WEFT_FP8_SCALE_ROWS && dim == 1)
    return o;
  long outer, inner, partOuter, partInner;
  weft_fp8_scale_grid(shard.scaleMode, whole[0], whole[1], &outer, &inner);
  weft_fp8_scale_grid(shard.scaleMode, part[0], part[1], &partOuter,
                      &partInner);
  Type f32 = l.builder().getF32Type();
  o.scaleInv = l.alloc({outer * inner}, f32);
  gatherInto(l, gather.getLoc(), gather.getAxesAttr(), {outer, inner},
             partOuter == outer ? 1 : 0,
             l.view(shard.scaleInv, 0, {partOuter, partInner}, f32),
             l.view(o.scaleInv, 0, {outer, inner}, f32));
  return o;
}

/// Gathered 128 x 128 blocks `o` of a matrix `whole` [R, C] transposed:
/// the codes, and the grid of scales [ceil(R / 128)][ld] into
/// [ceil(C / 128)][ld'] (padding never read).
Fp8Operand transposeBlocks(ProgramLowering &l, Location loc,
                           const Fp8Operand &o, ArrayRef<int64_t> whole,
                           Type format) {
  Fp8Operand t = o;
  t.codes = transposeCodes(l, loc, o.codes, whole, format);
  long outer, inner, tOuter, tInner;
  weft_fp8_scale_grid(o.scaleMode, whole[0], whole[1], &outer, &inner);
  weft_fp8_scale_grid(o.scaleMode, whole[1], whole[0], &tOuter, &tInner);
  t.scaleInv = l.alloc({tOuter * tInner}, l.builder().getF32Type());
  OpBuilder &b = l.builder();
  sched::CopyOp::create(b, loc, o.scaleInv, t.scaleInv,
                        b.getDenseI64ArrayAttr({1, outer, tOuter}),
                        b.getDenseI64ArrayAttr({0, 0, inner, 1}),
                        b.getDenseI64ArrayAttr({0, 0, 1, tInner}),
                        FlatSymbolRefAttr(), ArrayAttr(), IntegerAttr(),
                        b.getStringAttr("compute"));
  return t;
}

} // namespace

void planFp8Storage(func::FuncOp f, ProgramLowering &l) {
  // Candidates: quantizations only GEMMs read, each in a layout some
  // cuBLASLt scale mode reads (block scales: one GEMM). A layout (the value
  // as stored, one transposed shape, or the gathered values as stored or
  // transposed) is cast once, so it has one mode for all its GEMMs.
  llvm::MapVector<Operation *, Fp8Plan> plans;
  using Layout = std::pair<Operation *, SmallVector<int64_t>>; // {} stored.
  std::map<Layout, int> modes; // The modes each layout may still take.
  auto layoutOf = [](Operation *q, Value v, const Fp8GemmUse &use) {
    if (use.gather)
      return Layout{q, {-1, use.transposed}};
    return Layout{
        q, use.transposed
               ? SmallVector<int64_t>(cast<ShapedType>(v.getType()).getShape())
               : SmallVector<int64_t>()};
  };
  f.walk([&](Fp8QuantizeOp q) {
    if (!fp8GemmOperandOf(q.getResult()))
      return;
    Fp8Plan plan;
    if (!collectGemmUses(q.getResult(), plan.uses, plan.views, AllGatherOp(),
                         &plan.keepValues) ||
        plan.uses.empty())
      return;
    std::map<Layout, int> mine;
    for (auto &[v, use] : plan.uses) {
      GemmOperands g = *gemmOperands(use.matmul);
      int allowed = use.gather ? gatheredScaleModes(q, v, use)
                               : scaleModesOf(q, v, use.transposed, g.grouped);
      if (!g.grouped && !singleGemm(g))
        allowed &= 1 << WEFT_FP8_SCALE_TENSOR;
      auto [it, fresh] = mine.insert({layoutOf(q, v, use), allowed});
      it->second &= allowed;
      if (!it->second)
        return;
    }
    modes.insert(mine.begin(), mine.end());
    plans.insert({q, std::move(plan)});
  });
  auto e5m2 = [](Fp8QuantizeOp q) {
    return isa<Float8E5M2Type>(q.getFormat());
  };
  // The layout in which quantization `other` is operand `lhs` of `matmul`.
  auto partnerLayout = [&](Fp8QuantizeOp other, Operation *matmul,
                           bool lhs) -> std::optional<Layout> {
    auto it = plans.find(other);
    if (it == plans.end())
      return std::nullopt;
    for (const auto &[v, use] : it->second.uses)
      if (use.matmul == matmul && use.lhs == lhs)
        return layoutOf(other, v, use);
    return std::nullopt;
  };
  // The modes in `mine` that some mode in `theirs` pairs with.
  auto pairing = [](int mine, int theirs, bool lhs) {
    int kept = 0;
    for (int a = 0; a < WEFT_FP8_SCALE_MODES; ++a)
      for (int b = 0; b < WEFT_FP8_SCALE_MODES; ++b)
        if ((mine >> a & 1) && (theirs >> b & 1) &&
            weft_fp8_scale_modes_pair(lhs ? a : b, lhs ? b : a))
          kept |= 1 << a;
    return kept;
  };
  // Until nothing changes: narrow each layout to the modes its GEMMs'
  // other operands can pair with, and drop the quantizations with a GEMM
  // whose other operand is no candidate (cuBLASLt multiplies FP8 by FP8),
  // is E5M2 as well, or pairs with none of its modes.
  for (bool changed = true; changed;) {
    changed = false;
    Operation *dropped = nullptr; // Erased once no iterator points at it.
    for (auto it = plans.begin(); it != plans.end() && !changed; ++it) {
      auto q = cast<Fp8QuantizeOp>(it->first);
      for (const auto &[v, use] : it->second.uses) {
        GemmOperands g = *gemmOperands(use.matmul);
        Fp8QuantizeOp other = fp8GemmOperandOf(use.lhs ? g.rhs : g.lhs);
        std::optional<Layout> theirs =
            other ? partnerLayout(other, use.matmul, !use.lhs) : std::nullopt;
        int &mine = modes[layoutOf(q, v, use)];
        int kept = theirs && !(e5m2(q) && e5m2(other))
                       ? pairing(mine, modes[*theirs], use.lhs)
                       : 0;
        if (kept == mine)
          continue;
        mine = kept;
        if (!kept)
          dropped = q;
        changed = true;
        break;
      }
    }
    if (dropped)
      plans.erase(dropped);
  }
  // Each layout takes its first mode left. The modes are ordered (tensor,
  // rows, 1 x 128, 128 x 128, 1 x 32) so that two layouts whose every mode
  // pairs with one of the other's have first modes that pair: a tensor
  // pairs only with a tensor, rows only with rows, 1 x 32 only with 1 x 32
  // (last, so first only where it is alone, as its partner then is), and
  // of two masks holding 128-blocks only, one that is 128 x 128 alone faces
  // one holding 1 x 128.
  auto first = [](int mask) { return llvm::countr_zero(unsigned(mask)); };
  for (auto &[q, plan] : plans)
    for (auto &[v, use] : plan.uses)
      use.scaleMode = first(modes[layoutOf(q, v, use)]);
  for (auto &[op, plan] : plans)
    l.planFp8Cast(op, std::move(plan));
  // A quantization whose values only all-gathers read (a weight quantized
  // once a step into weft-gather-per-step's state, a sequence-parallel
  // activation some reader needs as values) moves as codes too, decoded on
  // arrival (lowerFp8DecodedGather).
  f.walk([&](Fp8QuantizeOp q) {
    if (plans.count(q) || !gathersFp8Codes(q))
      return;
    for (Operation *g : q.getResult().getUsers())
      l.planFp8DecodedGather(g, q);
  });
}

FailureOr<std::pair<const Fp8Operand *, const Fp8Operand *>>
fp8OperandPair(Operation *op, const ProgramLowering &l, Value lhs,
               bool lhsTransposed, Value rhs, bool rhsTransposed) {
  const Fp8Operand *a = l.fp8Operand(lhs, lhsTransposed),
                   *c = l.fp8Operand(rhs, rhsTransposed);
  if (static_cast<bool>(a) != static_cast<bool>(c))
    return op->emitOpError("has one FP8-stored operand, not two");
  return std::pair{a, c};
}

ArrayAttr fp8ScaleModes(Builder &b, const Fp8Operand &a, const Fp8Operand &c) {
  if (a.scaleMode == WEFT_FP8_SCALE_TENSOR &&
      c.scaleMode == WEFT_FP8_SCALE_TENSOR)
    return {};
  return b.getStrArrayAttr({sched::fp8ScaleModeName(a.scaleMode),
                            sched::fp8ScaleModeName(c.scaleMode)});
}

bool lowerFp8GroupCast(Fp8GroupQuantizeOp op, ProgramLowering &l) {
  // Every reader an expert weight gradient of two such quantizations of
  // one tiling, into f32 or bf16, not E5M2 by E5M2 (no FP8 GEMM takes it).
  if (!l.target().fp8Storage || op.getResult().use_empty())
    return false;
  for (Operation *user : op.getResult().getUsers()) {
    auto wgrad = dyn_cast<GroupedMatmulWgradOp>(user);
    if (!wgrad || wgrad.getLhs() == wgrad.getRhs())
      return false;
    auto a = wgrad.getLhs().getDefiningOp<Fp8GroupQuantizeOp>(),
         c = wgrad.getRhs().getDefiningOp<Fp8GroupQuantizeOp>();
    Type out = getElementTypeOrSelf(wgrad.getResult().getType());
    if (!a || !c || a.getRows() != c.getRows() ||
        (isa<Float8E5M2Type>(a.getFormat()) &&
         isa<Float8E5M2Type>(c.getFormat())) ||
        (!out.isF32() && !out.isBF16()))
      return false;
  }
  OpBuilder &b = l.builder();
  Value x = l.read(op, op.getInput(), /*f32=*/true);
  ArrayRef<int64_t> shape = op.getInput().getType().getShape();
  int64_t n = shape[0], cols = shape[1];
  auto experts = static_cast<int64_t>(op.getExperts());
  Fp8Operand o;
  o.codes = l.alloc({cols, n}, op.getFormat());
  o.scaleInv = l.alloc({weft_fp8_group_tiles(experts, n, op.getRows()), cols},
                       b.getF32Type());
  sched::Fp8GroupCastOp::create(
      b, op.getLoc(), x, l.stored(op.getSizes()), o.codes, o.scaleInv,
      b.getI64IntegerAttr(op.getRows()), b.getI64IntegerAttr(experts),
      op.getPow2ScalesAttr(), b.getStringAttr("compute"));
  l.setFp8Operand(op.getResult(), /*transposed=*/true, o);
  return true;
}

namespace {
/// sched.fp8_decode of `codes` by `amax` into result `r` of `op`: a GPU
/// writes bf16 as stored; f16 and the CPU's kernels write f32, narrowed
/// after.
void decodeInto(ProgramLowering &l, Operation *op, Value r, Value codes,
                Value amax, UnitAttr pow2) {
  OpBuilder &b = l.builder();
  bool f32 = !l.target().cuda || !getElementTypeOrSelf(r.getType()).isBF16();
  sched::Fp8DecodeOp::create(b, op->getLoc(), codes, amax, l.write(op, r, f32),
                             pow2, b.getStringAttr("compute"));
}
} // namespace

bool lowerFp8StateValues(Fp8QuantizeOp op, ProgramLowering &l) {
  // Its maxima give the held codes' values back to the bit.
  Value held = l.fp8StateCodes(op.getInput());
  if (held)
    decodeInto(l, op, op.getResult(), held, l.read(op, op.getAmax()),
               op.getPow2ScalesAttr());
  return static_cast<bool>(held);
}

LogicalResult lowerFp8Cast(Fp8QuantizeOp op, Fp8Plan &plan,
                           ProgramLowering &l) {
  OpBuilder &b = l.builder();
  Location loc = op.getLoc();
  Type format = op.getFormat(), f32 = b.getF32Type();
  Value amax = l.read(op, op.getAmax());
  // A state held as codes (fp8CodeStates) is read as they are, in every
  // layout; any other input is cast, a bf16 one read as stored on a GPU
  // (SchedTarget::keepsStored).
  Value held = l.fp8StateCodes(op.getInput()),
        x = held ? Value() : l.read(op, op.getInput()), heldScale;
  auto shapeOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape();
  };
  // One cast per layout: the value's own (any reshape views it), and each
  // transposed shape a GEMM reads. Block scales cast the value as its
  // matrix [rows, k] (k its last dimension; a transposed one is that
  // matrix), with the maxima viewed to match: their grid's leading
  // dimensions flatten as the value's do (weft_fp8_matrix_blocks).
  ArrayRef<int64_t> grid = shapeOf(op.getAmax());
  int64_t k = shapeOf(op.getResult()).back();
  int64_t rows = ShapedType::getNumElements(shapeOf(op.getResult())) / k;
  auto cast = [&](ArrayRef<int64_t> shape, bool transpose,
                  int mode) -> Fp8Operand {
    SmallVector<int64_t> inShape(shape), gridShape(grid);
    if (mode != WEFT_FP8_SCALE_TENSOR) {
      int64_t gridRows = ShapedType::getNumElements(grid) / grid.back();
      inShape = {rows, k};
      gridShape = {gridRows, grid.back()};
      // A batch of matrices [r, k] transposed each on its own (an expert
      // weight), every one the same number of block rows (planFp8Storage
      // checked that its blocks lie inside one).
      if (transpose && shape.size() > 2) {
        int64_t r = shape[shape.size() - 2];
        inShape = {rows / r, r, k};
        gridShape = {rows / r, gridRows / (rows / r), grid.back()};
      }
    }
    SmallVector<int64_t> outShape(inShape);
    if (transpose)
      std::swap(outShape[outShape.size() - 2], outShape.back());
    int64_t operandRows =
        ShapedType::getNumElements(outShape) / outShape.back();
    Fp8Operand o;
    o.scaleMode = mode;
    if (held) {
      // The held codes are the cast's (an element's code depends on its
      // block's scale alone): as they are, or a transposing copy of them.
      Value codes = l.view(held, 0, inShape, format);
      o.codes =
          transpose ? transposeCodes(l, loc, codes, inShape, format) : held;
      // One scale serves every layout.
      if (mode == WEFT_FP8_SCALE_TENSOR && heldScale) {
        o.scaleInv = heldScale;
        return o;
      }
    }
    o.scaleInv = l.alloc(
        {weft_fp8_scale_count(mode, operandRows, outShape.back())}, f32);
    StringAttr modeName = mode == WEFT_FP8_SCALE_TENSOR
                              ? StringAttr()
                              : b.getStringAttr(sched::fp8ScaleModeName(mode));
    UnitAttr pow2 = op.getPow2Scales() ? b.getUnitAttr() : UnitAttr();
    Value grid = l.view(amax, 0, gridShape, f32);
    UnitAttr transposeAttr = transpose ? b.getUnitAttr() : UnitAttr();
    if (held) {
      // The scales for the held codes' layout, from the maxima.
      sched::Fp8ScaleInvOp::create(b, loc, l.view(held, 0, inShape, format),
                                   grid, o.scaleInv, transposeAttr, modeName,
                                   pow2, b.getStringAttr("compute"));
      if (mode == WEFT_FP8_SCALE_TENSOR)
        heldScale = o.scaleInv;
      return o;
    }
    Type stored = llvm::cast<sched::BufferType>(x.getType()).getElementType();
    o.codes = l.alloc(outShape, format);
    sched::Fp8CastOp::create(b, loc, l.view(x, 0, inShape, stored), grid,
                             o.codes, o.scaleInv, transposeAttr, modeName, pow2,
                             b.getStringAttr("compute"));
    return o;
  };
  // Every layout as stored has the same blocks, so one mode (but for one
  // behind a gather, which may be another's).
  std::map<int, Fp8Operand> plain;
  auto plainCodes = [&](int mode) {
    auto it = plain.find(mode);
    if (it == plain.end())
      it = plain.insert({mode, cast(shapeOf(op.getResult()), false, mode)})
               .first;
    return it->second;
  };
  llvm::SmallDenseMap<ArrayRef<int64_t>, Fp8Operand> transposed;
  for (const auto &[v, use] : plan.uses) {
    ArrayRef<int64_t> shape = shapeOf(v);
    if (use.gather) {
      // The shard is cast here, where the quantization is, and gathered
      // where each gather is (lowerFp8Gather): the backward's gather again
      // of the quantized shard (weft-reshard-after-forward) in the
      // backward. With one scale, the codes as stored; with blocks, in the
      // layout the GEMM reads.
      bool t = use.scaleMode != WEFT_FP8_SCALE_TENSOR && use.transposed &&
               !gathersAsStored(use);
      auto [it, fresh] = plan.shardCasts.insert({{t, use.scaleMode}, {}});
      if (fresh)
        it->second = t ? cast(shapeOf(op.getResult()), true, use.scaleMode)
                       : plainCodes(use.scaleMode);
      continue;
    }
    if (!use.transposed) {
      Fp8Operand o = plainCodes(use.scaleMode);
      l.setFp8Operand(
          v, false,
          {l.view(o.codes, 0, shape, format), o.scaleInv, o.scaleMode});
      continue;
    }
    auto it = transposed.find(shape);
    if (it == transposed.end())
      it = transposed.insert({shape, cast(shape, true, use.scaleMode)}).first;
    l.setFp8Operand(v, true, it->second);
  }
  return success();
}

Value lowerFp8Encode(Fp8QuantizeOp q, ProgramLowering &l) {
  // A state held as codes by these maxima (fp8CodeStates) is its codes.
  if (Value codes = l.fp8StateCodes(q.getInput()))
    return codes;
  OpBuilder &b = l.builder();
  Value codes = l.alloc(q.getType().getShape(), q.getFormat());
  // A GPU reads a bf16 input as stored (SchedTarget::keepsStored).
  sched::Fp8EncodeOp::create(b, q.getLoc(), l.read(q, q.getInput()),
                             l.read(q, q.getAmax()), codes,
                             q.getPow2ScalesAttr(), b.getStringAttr("compute"));
  return codes;
}

LogicalResult lowerFp8DecodedGather(AllGatherOp gather, Value codes,
                                    ProgramLowering &l) {
  auto q = cast<Fp8QuantizeOp>(gather.getInput().getDefiningOp());
  OpBuilder &b = l.builder();
  Location loc = gather.getLoc();
  // A state held as FP8 codes is assigned them as they are (gathered into
  // its storage where nothing in the program reads it: inPlaceParam).
  if (llvm::all_of(gather->getUsers(), [&](Operation *user) {
        auto assign = dyn_cast<AssignOp>(user);
        return assign && l.heldAsFp8Codes(assign.getName());
      })) {
    gatherInto(l, gather, codes, l.defineAs(gather.getResult(), q.getFormat()));
    return success();
  }
  auto wholeType = cast<RankedTensorType>(gather.getResult().getType());
  Value whole = l.alloc(wholeType.getShape(), q.getFormat());
  gatherInto(l, gather, codes, whole);
  // The whole tensor's maxima (decodingMaxima), or each shard's own blocks
  // gathered with it.
  Value amax;
  if (Value maxima = decodingMaxima(gather)) {
    amax = maxima == q.getAmax() ? l.read(q, q.getAmax()) : l.stored(maxima);
  } else {
    int64_t dim = gather.getDim();
    SmallVector<int64_t> all(q.getAmax().getType().getShape());
    all[dim] *= l.groupSize(gather.getAxes());
    amax = l.alloc(all, b.getF32Type());
    gatherInto(l, loc, gather.getAxes(), all, dim, l.read(q, q.getAmax()),
               amax);
  }
  decodeInto(l, gather, gather.getResult(), whole, amax, q.getPow2ScalesAttr());
  return success();
}

LogicalResult lowerFp8Gather(AllGatherOp gather, ProgramLowering &l) {
  auto q = cast<Fp8QuantizeOp>(l.fp8GatherSource(gather));
  const Fp8Plan &plan = *l.fp8Plan(q);
  Type format = q.getFormat();
  ArrayRef<int64_t> shardShape = q.getResult().getType().getShape();
  ArrayRef<int64_t> wholeShape =
      cast<ShapedType>(gather.getResult().getType()).getShape();
  Value whole; // The codes as stored, gathered: one scale.
  std::map<SmallVector<int64_t>, Value> transposed;
  // Block scales: gathered once per layout cast and mode, 128 x 128 blocks
  // read transposed then transposed once.
  std::map<std::pair<bool, int>, Fp8Operand> blocks;
  std::map<int, Fp8Operand> transposedBlocks;
  for (const auto &[v, use] : plan.uses) {
    if (AllGatherOp(use.gather) != gather)
      continue;
    ArrayRef<int64_t> shape = cast<ShapedType>(v.getType()).getShape();
    if (use.scaleMode != WEFT_FP8_SCALE_TENSOR) {
      bool castTransposed = use.transposed && !gathersAsStored(use);
      auto [it, fresh] = blocks.insert({{castTransposed, use.scaleMode}, {}});
      if (fresh) {
        SmallVector<int64_t> part(shardShape), all(wholeShape);
        if (castTransposed) {
          std::swap(part[0], part[1]);
          std::swap(all[0], all[1]);
        }
        it->second = gatherBlocks(
            l, gather, plan.shardCasts.at({castTransposed, use.scaleMode}),
            part, all, gatheredDim(use), format);
      }
      Fp8Operand o = it->second;
      if (gathersAsStored(use)) {
        auto [t, freshT] = transposedBlocks.insert({use.scaleMode, {}});
        if (freshT)
          t->second =
              transposeBlocks(l, gather.getLoc(), o, wholeShape, format);
        o = t->second;
      }
      l.setFp8Operand(v, use.transposed, o);
      continue;
    }
    // The shard's codes gathered, viewed or transposed as the GEMM reads
    // them; every rank's scale is the same (gatheredScaleModes).
    const Fp8Operand &shard =
        plan.shardCasts.at({false, WEFT_FP8_SCALE_TENSOR});
    if (!whole) {
      whole = l.alloc(wholeShape, format);
      gatherInto(l, gather, l.view(shard.codes, 0, shardShape, format), whole);
    }
    Value codes = l.view(whole, 0, shape, format);
    if (use.transposed) {
      Value &t = transposed[SmallVector<int64_t>(shape)];
      if (!t)
        t = transposeCodes(l, gather.getLoc(), codes, shape, format);
      codes = t;
    }
    l.setFp8Operand(v, use.transposed, {codes, shard.scaleInv});
  }
  return success();
}

} // namespace weft::codegen

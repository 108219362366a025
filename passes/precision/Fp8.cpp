//===- Fp8.cpp - FP8 weight GEMMs by a scaling recipe ---------------------===//
//
// Rewrites the forward before autodiff, as torchao's Float8Linear swaps a
// module: y = x @ w becomes q(x) @ q(w) with y passing through an identity
// whose gradient is quantized, so autodiff's two backward GEMMs read FP8
// operands and a quantized output gradient: the forward's quantizations
// where their scales run along the backward GEMM's contraction, else ones
// made again along it (each quantization's backward_block). Numerics
// are emulated exactly in f32 (weft.fp8_quantize's definition); partitioning
// then places the quantizations like any op, so a per-tensor amax of a
// split tensor is taken over the whole tensor, as on one device.
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Passes.h"

#include "passes/LayerRuns.h"
#include "passes/costmodel/CostModel.h"
#include "passes/precision/Fp8Gain.h"
#include "passes/sharding/Passes.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace weft {
#define GEN_PASS_DEF_FP8
#include "passes/precision/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
enum class Recipe {
  None,
  Tensorwise,
  TensorwiseDelayed,
  Rowwise,
  Blockwise,
  Mxfp8
};

/// How a recipe cuts a matrix [rows, cols] whose contraction is along
/// `cols` (an activation, an output gradient) or `rows` (a weight).
struct Blocks {
  Recipe recipe;

  /// The block along the contraction (0: the whole dimension) and across it.
  int64_t along() const {
    switch (recipe) {
    case Recipe::Blockwise:
      return 128;
    case Recipe::Mxfp8:
      return 32;
    default:
      return 0;
    }
  }
  bool tiledWeights() const { return recipe == Recipe::Blockwise; }
  /// The tiles of a group's rows an expert weight gradient quantizes (0:
  /// the group whole, row-wise's column-wise scale per group).
  int64_t groupRows() const { return along(); }
  bool pow2() const { return recipe == Recipe::Mxfp8; }
  bool perTensor() const {
    return recipe == Recipe::Tensorwise || recipe == Recipe::TensorwiseDelayed;
  }
  bool delayed() const { return recipe == Recipe::TensorwiseDelayed; }
  /// Per-tensor recipes keep E5M2 for the output gradient (TE's hybrid
  /// format).
  Type gradFormat(MLIRContext *ctx) const {
    return perTensor() ? Type(Float8E5M2Type::get(ctx))
                       : Type(Float8E4M3FNType::get(ctx));
  }

  /// The block shape of `shape` contracted along `dim`; `weight` marks the
  /// operand that is a parameter (its other matrix dimension is blocked too
  /// under blockwise). Leading (batch) dimensions get blocks of 1 unless
  /// the tensor is one block.
  SmallVector<int64_t> of(ArrayRef<int64_t> shape, int64_t dim,
                          bool weight) const {
    if (perTensor())
      return SmallVector<int64_t>(shape);
    auto rank = static_cast<int64_t>(shape.size());
    SmallVector<int64_t> block(rank, 1);
    block[dim] = along() ? along() : shape[dim];
    if (weight && tiledWeights()) {
      int64_t other = dim == rank - 1 ? rank - 2 : rank - 1;
      block[other] = along();
    }
    return block;
  }
  /// The blocks of a backward GEMM's re-quantization of `shape`, which it
  /// contracts along `dims` (increasing, the last the innermost), when the
  /// forward's `block` is one element thick along them all (else, or when
  /// the recipe's tile does not divide the innermost, none: the GEMM reads
  /// the forward's quantization). Row-wise: one scale over all of `dims`;
  /// blockwise and MXFP8: tiles of 128 or 32 along the innermost of them
  /// (DeepSeek-V3's 128 x 1 weight-gradient tiles), so no tile straddles
  /// two sequences. (Under cp, which holds the sequence in its
  /// load-balanced chunk order, a tile spans two chunks unless a chunk is a
  /// multiple of it.)
  std::optional<SmallVector<int64_t>> backward(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> block,
                                               ArrayRef<int64_t> dims) const {
    if (perTensor() || dims.empty() ||
        llvm::any_of(dims, [&](int64_t d) { return block[d] != 1; }))
      return std::nullopt;
    SmallVector<int64_t> result(shape.size(), 1);
    if (!along()) {
      for (int64_t d : dims)
        result[d] = shape[d];
      return result;
    }
    if (shape[dims.back()] % along() != 0)
      return std::nullopt;
    result[dims.back()] = along();
    return result;
  }

  /// Whether `size` (a contraction or output dimension) can be cut.
  bool fits(int64_t size) const {
    return size % 16 == 0 && (!along() || size % along() == 0);
  }
};

std::optional<Recipe> parseRecipe(StringRef recipe) {
  return llvm::StringSwitch<std::optional<Recipe>>(recipe)
      .Case("none", Recipe::None)
      .Case("tensorwise", Recipe::Tensorwise)
      .Case("tensorwise-delayed", Recipe::TensorwiseDelayed)
      .Case("rowwise", Recipe::Rowwise)
      .Case("blockwise", Recipe::Blockwise)
      .Case("mxfp8", Recipe::Mxfp8)
      .Default(std::nullopt);
}

/// The parameter `v` reads through views and casts, or null.
ParamOp paramBehind(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto param = dyn_cast<ParamOp>(def))
      return param;
    if (!isa<CastOp, ReshapeOp, SliceOp, TransposeOp>(def))
      return nullptr;
    v = def->getOperand(0);
  }
  return nullptr;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A GEMM the recipe may quantize: its two operands and the dimension of
/// each that the GEMM contracts.
struct Gemm {
  Operation *op;
  OpOperand *lhs, *rhs;
  int64_t lhsK, rhsK;
  /// What the backward GEMMs contract (matmulBackwardDims; its `grad` is
  /// the input gradient's, along which the output gradient's forward blocks
  /// already run). For expert GEMMs only the weight's, in the input
  /// gradient: their weight gradients sum over each expert's rows, whose
  /// blocks follow the routing (the operands' `group_rows`).
  MatmulBackwardDims backward;
  /// An expert layer's weft.grouped_matmul: quantized by per-row recipes
  /// only (see below).
  bool grouped = false;
};

/// What makes two quantizations one (see `quantized` in Fp8Pass::rewrite):
/// the value, its blocks, its backward re-quantization's blocks, and the
/// recipe's power-of-two scaling with the expert rows' tiles (with a recipe
/// per layer, MXFP8's 32-blocks are another quantization than a row-wise
/// recipe's rows of 32).
using QuantizationKey = std::tuple<Value, Attribute, Attribute, Attribute>;

QuantizationKey quantizationKey(Builder &b, Value v, ArrayRef<int64_t> block,
                                DenseI64ArrayAttr backward, bool pow2,
                                IntegerAttr rows) {
  return {v, b.getDenseI64ArrayAttr(block), backward,
          b.getArrayAttr(
              {b.getBoolAttr(pow2), rows ? Attribute(rows) : b.getUnitAttr()})};
}

/// Each GEMM's operand and result shapes as one rank holds them: the
/// shapes of its ranked operands (by operand number) and of its result.
struct LocalShapes {
  SmallVector<SmallVector<int64_t>> operands;
  SmallVector<int64_t> result;
};
using PlacedGemms = llvm::DenseMap<Operation *, LocalShapes>;

bool isGemm(Operation *op) { return isa<MatmulOp, GroupedMatmulOp>(op); }

/// Places a copy of `module` by `planText` as the training pipeline places
/// the forward (weft-apply-plan, then propagation and partitioning of each
/// function) and reads back every GEMM's local shapes. Partitioning retypes
/// ops in place, so a GEMM is found again by the index it is tagged with.
FailureOr<PlacedGemms> placeGemms(ModuleOp module, StringRef planText) {
  // No plan: one rank, which holds every GEMM whole (checkFp8Options has
  // read the plan).
  Plan plan = planText.empty() ? Plan() : cantFail(parsePlan(planText));
  SmallVector<Operation *> gemms;
  module.walk([&](Operation *op) {
    if (isGemm(op))
      gemms.push_back(op);
  });
  OwningOpRef<ModuleOp> copy = module.clone();
  StringRef tag = "weft.fp8_gemm_index";
  int64_t next = 0;
  Builder b(module.getContext());
  copy->walk([&](Operation *op) {
    if (isGemm(op))
      op->setAttr(tag, b.getI64IntegerAttr(next++));
  });
  if (plan.worldSize() > 1) {
    if (failed(applyPlan(*copy, plan)))
      return failure();
    for (auto f : copy->getOps<func::FuncOp>()) {
      if (f.isDeclaration())
        continue;
      propagateShardings(f);
      if (failed(partition(f)))
        return failure();
    }
  }
  PlacedGemms placed;
  copy->walk([&](Operation *op) {
    auto index = op->getAttrOfType<IntegerAttr>(tag);
    if (!index)
      return;
    LocalShapes &local = placed[gemms[index.getInt()]];
    for (Value v : op->getOperands())
      local.operands.push_back(SmallVector<int64_t>(
          isa<RankedTensorType>(v.getType()) ? shapeOf(v)
                                             : ArrayRef<int64_t>()));
    local.result = SmallVector<int64_t>(shapeOf(op->getResult(0)));
  });
  return placed;
}

struct Fp8Pass : public weft::impl::Fp8Base<Fp8Pass> {
  using Fp8Base::Fp8Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isDeclaration())
        funcs.push_back(f);
    // Option errors go on the (first) function they were to rewrite.
    Operation *anchor = funcs.empty() ? module.getOperation() : funcs.front();
    Fp8Options options{recipe, keep, minDim, history, margin, device, plan};
    if (llvm::Error e = checkFp8Options(options)) {
      anchor->emitError("weft-fp8: ") << llvm::toString(std::move(e));
      return signalPassFailure();
    }
    Fp8Choice choice = *parseFp8(recipe);
    if (!choice.any())
      return;
    // The device GEMMs are judged on, when it runs FP8 at its own rate.
    std::optional<Topology> judge;
    PlacedGemms placed;
    if (!device.empty()) {
      llvm::Expected<Topology> topology = Topology::load(device);
      if (!topology) {
        anchor->emitError("weft-fp8: device '")
            << device << "': " << llvm::toString(topology.takeError());
        return signalPassFailure();
      }
      if (topology->device.peakFlops.count("fp8")) {
        judge = std::move(*topology);
        FailureOr<PlacedGemms> found = placeGemms(module, plan);
        if (failed(found))
          return signalPassFailure();
        placed = std::move(*found);
      }
    }
    for (func::FuncOp func : funcs)
      if (failed(
              rewrite(func, choice, judge ? &judge->device : nullptr, placed)))
        return signalPassFailure();
  }

  /// Quantizes `func`'s weight GEMMs by `choice`; with `device`, only those
  /// that gain there at their `placed` shapes.
  LogicalResult rewrite(func::FuncOp func, const Fp8Choice &choice,
                        const DeviceSpec *device, const PlacedGemms &placed) {
    SmallVector<StringRef> names;
    StringRef(keep).split(names, ',', -1, /*KeepEmpty=*/false);
    auto named = [&](StringRef layer) {
      return llvm::any_of(names,
                          [&](StringRef n) { return n.trim() == layer; });
    };
    bool keepHead = named("head"), keepFirst = named("first"),
         keepLast = named("last");

    int64_t firstLayer = std::numeric_limits<int64_t>::max(), lastLayer = -1;
    func.walk([&](ParamOp p) {
      if (auto layer = p->getAttrOfType<IntegerAttr>(kLayerAttr)) {
        firstLayer = std::min(firstLayer, layer.getInt());
        lastLayer = std::max(lastLayer, layer.getInt());
      }
    });
    int64_t layers = lastLayer < 0 ? 0 : lastLayer - firstLayer + 1;
    if (!choice.layers.empty() &&
        static_cast<int64_t>(choice.layers.size()) != layers) {
      return func.emitError("weft-fp8: the recipe names ")
             << choice.layers.size() << " layers, but the model has " << layers
             << " (e.g. " << choice.layers.front() << "*" << layers << ")";
    }
    // The recipe of a GEMM reading parameter `p`.
    auto recipeOf = [&](ParamOp p) -> const std::string & {
      auto layer = p->getAttrOfType<IntegerAttr>(kLayerAttr);
      return layer ? choice.of(layer.getInt() - firstLayer) : choice.outside();
    };
    auto kept = [&](ParamOp p) {
      auto layer = p->getAttrOfType<IntegerAttr>(kLayerAttr);
      if (!layer)
        return keepHead;
      return (keepFirst && layer.getInt() == firstLayer) ||
             (keepLast && layer.getInt() == lastLayer);
    };

    MLIRContext *ctx = &getContext();
    Type e4m3 = Float8E4M3FNType::get(ctx), f32 = Float32Type::get(ctx);
    int64_t gemms = 0, fp8Bytes = 0, bf16Bytes = 0;
    llvm::StringMap<int64_t> weightUses;
    // One quantization per value and block: GEMMs reading the same input
    // (q, k and v projections; an expert layer's gate and up) share it, so
    // it is computed once and, for packed expert rows, sent to the
    // experts' ranks once. Delayed scaling keeps one history per GEMM. The
    // forward is one block, walked in order: a quantization made before
    // the first GEMM that reads it dominates the later ones.
    llvm::DenseMap<QuantizationKey, Value> quantized;
    // Quantizations whose FP8 bytes are counted, and the values they
    // quantize, whose bf16 bytes are: delayed scaling's separate
    // quantizations of one input (q, k and v each keep a history) are
    // three FP8 copies of one bf16 tensor, so the bf16 count is the
    // model's whatever the recipe.
    llvm::DenseSet<Value> counted, countedSources;
    std::vector<Gemm> candidates;
    func.walk([&](Operation *op) {
      if (auto m = dyn_cast<MatmulOp>(op)) {
        auto lr = static_cast<int64_t>(shapeOf(m.getLhs()).size()),
             rr = static_cast<int64_t>(shapeOf(m.getRhs()).size());
        candidates.push_back({op, &m.getLhsMutable(), &m.getRhsMutable(),
                              m.getTransposeLhs() ? lr - 2 : lr - 1,
                              m.getTransposeRhs() ? rr - 1 : rr - 2,
                              matmulBackwardDims(m)});
      } else if (auto g = dyn_cast<GroupedMatmulOp>(op)) {
        // Expert GEMMs take per-row activation scales only (row-wise,
        // block-wise, MXFP8), as torchao's scaled grouped GEMM does: the
        // packed rows of one rank's buffer are no block of a tensor whose
        // maximum the partitioner could combine across ranks, while a row's
        // own scale goes with it to its expert's rank. Each expert's weight
        // gets its own scales (blocks of one along the experts); the input
        // gradient contracts it along its output features, M of [E, M, K]
        // ([E, K, M] untransposed).
        MatmulBackwardDims backward;
        backward.rhs = {g.getTransposeRhs() ? 1 : 2};
        candidates.push_back({op, &g.getInputMutable(), &g.getWeightMutable(),
                              1, g.getTransposeRhs() ? 2 : 1, backward,
                              /*grouped=*/true});
      }
    });
    // The recipe a GEMM is quantized by, or none when it stays as it is.
    auto eligible = [&](const Gemm &gemm) -> std::optional<Blocks> {
      Value lhs = gemm.lhs->get(), rhs = gemm.rhs->get();
      ParamOp wl = paramBehind(lhs), wr = paramBehind(rhs);
      if ((!wl && !wr) || (wl && kept(wl)) || (wr && kept(wr)))
        return std::nullopt;
      Blocks blocks{*parseRecipe(recipeOf(wl ? wl : wr))};
      if (blocks.recipe == Recipe::None || (gemm.grouped && blocks.perTensor()))
        return std::nullopt;
      ArrayRef<int64_t> ls = shapeOf(lhs), rs = shapeOf(rhs),
                        ys = shapeOf(gemm.op->getResult(0));
      auto lr = static_cast<int64_t>(ls.size()),
           rr = static_cast<int64_t>(rs.size());
      int64_t lhsK = gemm.lhsK, rhsK = gemm.rhsK;
      int64_t k = ls[lhsK], n = ys.back();
      if (!blocks.fits(k) || !blocks.fits(n) || k < minDim || n < minDim)
        return std::nullopt;
      // Blockwise weights are tiled along both matrix dimensions.
      if (blocks.tiledWeights() &&
          ((wl && !blocks.fits(ls[lhsK == lr - 1 ? lr - 2 : lr - 1])) ||
           (wr && !blocks.fits(rs[rhsK == rr - 1 ? rr - 2 : rr - 1]))))
        return std::nullopt;
      return blocks;
    };
    SmallVector<std::pair<const Gemm *, Blocks>> chosen;
    for (const Gemm &gemm : candidates)
      if (std::optional<Blocks> blocks = eligible(gemm))
        chosen.push_back({&gemm, *blocks});
    SmallVector<Attribute> noGain;
    if (device &&
        failed(dropWithoutGain(func, chosen, *device, placed, noGain)))
      return failure();

    for (auto [gemmPtr, blocks] : chosen) {
      const Gemm &gemm = *gemmPtr;
      Value lhs = gemm.lhs->get(), rhs = gemm.rhs->get();
      ParamOp wl = paramBehind(lhs), wr = paramBehind(rhs);
      ArrayRef<int64_t> ls = shapeOf(lhs), rs = shapeOf(rhs),
                        ys = shapeOf(gemm.op->getResult(0));
      int64_t lhsK = gemm.lhsK, rhsK = gemm.rhsK;

      OpBuilder b(gemm.op);
      Location loc = gemm.op->getLoc();
      // Delayed scaling's state: one amax history per quantized tensor,
      // named after the weight (and which of its GEMMs reads it), and the
      // largest of it (times 2^margin) as the block maxima of this step.
      int64_t &uses = weightUses[(wl ? wl : wr).getName()];
      std::string stem = (wl ? wl : wr).getName().str() + ".fp8" +
                         (uses ? "_" + std::to_string(uses) : "");
      ++uses;
      auto historyOf =
          [&](StringRef tensor,
              ArrayRef<int64_t> grid) -> std::pair<std::string, Value> {
        std::string name = stem + "." + tensor.str() + "_amax_history";
        OpBuilder top = OpBuilder::atBlockBegin(&func.getBody().front());
        auto param = ParamOp::create(
            top, loc, RankedTensorType::get({history}, f32),
            top.getStringAttr(name), InitKindAttr::get(ctx, InitKind::Zeros),
            FloatAttr(), top.getUnitAttr());
        // The weight's layer, so a pipeline keeps the history on the
        // weight's stage.
        if (Attribute layer = (wl ? wl : wr)->getAttr(kLayerAttr))
          param->setAttr(kLayerAttr, layer);
        Value h = param;
        weft::detail::Emitter e{b, loc};
        Value largest =
            e.reshape(e.reduceMax(h, {0}), RankedTensorType::get(grid, f32));
        if (margin > 0)
          largest =
              e.mul(largest, e.splatLike(largest, std::ldexp(1.0, margin)));
        return {name, largest};
      };
      // An expert layer's rows: its weight gradient quantizes them again
      // in tiles of each group (weft.fp8_group_quantize).
      IntegerAttr groupRows =
          gemm.grouped ? b.getI64IntegerAttr(blocks.groupRows()) : nullptr;
      auto quantize = [&](Value v, ArrayRef<int64_t> block,
                          ArrayRef<int64_t> backwardDims, Type format,
                          StringRef tensor, IntegerAttr rows) -> Value {
        std::optional<SmallVector<int64_t>> backward =
            blocks.backward(shapeOf(v), block, backwardDims);
        DenseI64ArrayAttr backwardAttr =
            backward ? b.getDenseI64ArrayAttr(*backward) : nullptr;
        Value *shared = nullptr;
        if (!blocks.delayed()) {
          shared = &quantized[quantizationKey(b, v, block, backwardAttr,
                                              blocks.pow2(), rows)];
          if (*shared)
            return *shared;
        }
        // A bf16 operand is quantized as stored: no widened copy.
        auto type = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> grid = fp8Grid(type.getShape(), block);
        auto amaxOp =
            Fp8AmaxOp::create(b, loc, RankedTensorType::get(grid, f32), v);
        Value amax = amaxOp;
        if (blocks.delayed()) {
          auto [name, largest] = historyOf(tensor, grid);
          amaxOp->setAttr(kAmaxHistoryAttr, b.getStringAttr(name));
          amax = delayedAmax(b, loc, amax, largest);
        }
        Value q = Fp8QuantizeOp::create(b, loc, v, amax, format, blocks.pow2(),
                                        backwardAttr, rows);
        return shared ? *shared = q : q;
      };
      SmallVector<int64_t> lhsBlock = blocks.of(ls, lhsK, wl != nullptr),
                           rhsBlock = blocks.of(rs, rhsK, wr != nullptr);
      Value lq = quantize(lhs, lhsBlock, gemm.backward.lhs, e4m3,
                          wl ? "weight" : "input", wl ? nullptr : groupRows);
      Value rq = quantize(rhs, rhsBlock, gemm.backward.rhs, e4m3,
                          wr ? "weight" : "input", wr ? nullptr : groupRows);
      gemm.lhs->set(lq);
      gemm.rhs->set(rq);
      // A shared quantization's bytes count once.
      bool newLhs = counted.insert(lq).second,
           newRhs = counted.insert(rq).second;
      bool newLhsSource = countedSources.insert(lhs).second,
           newRhsSource = countedSources.insert(rhs).second;

      // The output gradient is the dgrad's left operand, contracted along
      // its last dimension (n).
      b.setInsertionPointAfter(gemm.op);
      Value y = gemm.op->getResult(0);
      SmallVector<int64_t> gradBlock = blocks.of(ys, ys.size() - 1, false);
      Value gradHistory;
      std::string gradHistoryName;
      if (blocks.delayed()) {
        SmallVector<int64_t> grid(ys.size(), 1);
        std::tie(gradHistoryName, gradHistory) = historyOf("grad", grid);
      }
      std::optional<SmallVector<int64_t>> gradBackward =
          blocks.backward(ys, gradBlock, gemm.backward.weightGrad);
      auto mark = Fp8QuantizeGradOp::create(
          b, loc, y, gradHistory, blocks.gradFormat(ctx), gradBlock,
          blocks.pow2(),
          gradBackward ? b.getDenseI64ArrayAttr(*gradBackward) : nullptr,
          groupRows);
      if (gradHistory)
        mark->setAttr(kAmaxHistoryAttr, b.getStringAttr(gradHistoryName));
      y.replaceAllUsesExcept(mark, mark);

      // FP8 bytes: one per element plus a scale per block, an f32 as Weft
      // keeps them (MXFP8's too: its E8M0 values as f32, where the MX
      // format's byte would be a quarter of that); bf16: two per element.
      int64_t scaleBytes = 4;
      auto operandBytes = [&](ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> block) {
        int64_t elements = 1, scales = 1;
        for (auto [size, b] : llvm::zip(shape, block)) {
          elements *= size;
          scales *= size / b;
        }
        return std::pair{elements + scaleBytes * scales, 2 * elements};
      };
      for (auto [shape, block, fresh, freshSource] :
           {std::tuple{ls, ArrayRef<int64_t>(lhsBlock), newLhs, newLhsSource},
            std::tuple{rs, ArrayRef<int64_t>(rhsBlock), newRhs, newRhsSource},
            std::tuple{ys, ArrayRef<int64_t>(gradBlock), true, true}}) {
        auto [f, h] = operandBytes(shape, block);
        fp8Bytes += fresh ? f : 0;
        bf16Bytes += freshSource ? h : 0;
      }
      ++gemms;
    }
    func->setAttr(kFp8Attr, StringAttr::get(ctx, recipe));
    Builder b(ctx);
    func->setAttr(kFp8GemmsAttr, b.getI64IntegerAttr(gemms));
    func->setAttr(kFp8BytesAttr, b.getDenseI64ArrayAttr({fp8Bytes, bf16Bytes}));
    if (device)
      func->setAttr(kFp8NoGainAttr, b.getArrayAttr(noGain));
    return success();
  }

  /// Drops from `chosen` the GEMMs that would not gain from FP8 on
  /// `device` at their `placed` shapes (Fp8Gain.h), until none more would:
  /// a dropped GEMM leaves a quantization it shared to fewer readers.
  /// Appends the weight each dropped GEMM reads to `dropped`.
  LogicalResult
  dropWithoutGain(func::FuncOp func,
                  SmallVector<std::pair<const Gemm *, Blocks>> &chosen,
                  const DeviceSpec &device, const PlacedGemms &placed,
                  SmallVector<Attribute> &dropped) {
    // Per GEMM: its operands' local elements, how many times each is
    // quantized (once, and again where a backward GEMM re-quantizes it
    // along its own contraction), and what its quantizations are shared
    // by (as weft-fp8's `quantized` map shares them).
    struct Judged {
      QuantizationKey keys[2];
      double elements[2], passes[2];
      double output, outputPasses;
      Fp8GemmShape shape;
      double peak, modelBytes;
      bool shares;
    };
    Builder b(func.getContext());
    std::vector<Judged> judged;
    for (auto [gemm, blocks] : chosen) {
      auto found = placed.find(gemm->op);
      if (found == placed.end())
        return func.emitError("weft-fp8: a GEMM was not found in the placed "
                              "copy of the module"),
               failure();
      const LocalShapes &local = found->second;
      Judged j;
      j.shares = !blocks.delayed();
      OpOperand *operands[2] = {gemm->lhs, gemm->rhs};
      int64_t contraction[2] = {gemm->lhsK, gemm->rhsK};
      ArrayRef<int64_t> backward[2] = {gemm->backward.lhs, gemm->backward.rhs};
      bool lhsWeight = paramBehind(gemm->lhs->get()) != nullptr;
      // An expert layer's rows are quantized again in tiles of each
      // expert's rows for its weight gradient (weft.fp8_group_quantize),
      // its output gradient too.
      IntegerAttr groupRows =
          gemm->grouped ? b.getI64IntegerAttr(blocks.groupRows()) : nullptr;
      for (int i = 0; i < 2; ++i) {
        Value v = operands[i]->get();
        bool weight = paramBehind(v) != nullptr;
        SmallVector<int64_t> block =
            blocks.of(shapeOf(v), contraction[i], weight);
        std::optional<SmallVector<int64_t>> again =
            blocks.backward(shapeOf(v), block, backward[i]);
        IntegerAttr rows = weight ? nullptr : groupRows;
        j.keys[i] = quantizationKey(
            b, v, block, again ? b.getDenseI64ArrayAttr(*again) : nullptr,
            blocks.pow2(), rows);
        j.elements[i] = ShapedType::getNumElements(
            local.operands[operands[i]->getOperandNumber()]);
        j.passes[i] = again || rows ? 2 : 1;
      }
      ArrayRef<int64_t> ys = shapeOf(gemm->op->getResult(0));
      SmallVector<int64_t> gradBlock = blocks.of(ys, ys.size() - 1, false);
      j.output = ShapedType::getNumElements(local.result);
      j.outputPasses =
          blocks.backward(ys, gradBlock, gemm->backward.weightGrad) || groupRows
              ? 2
              : 1;
      j.shape.input = j.elements[lhsWeight ? 1 : 0];
      j.shape.weight = j.elements[lhsWeight ? 0 : 1];
      j.shape.output = j.output;
      j.shape.k = local.operands[gemm->lhs->getOperandNumber()][gemm->lhsK];
      // The GEMM's own precision: what its activation is stored in.
      Type element =
          cast<RankedTensorType>(operands[lhsWeight ? 1 : 0]->get().getType())
              .getElementType();
      std::string peakName = flopTypeOf(element);
      auto peak = device.peakFlops.find(peakName);
      if (peak == device.peakFlops.end())
        return func.emitError("weft-fp8: device '")
               << std::string(this->device) << "' has no " << peakName
               << " peak to judge FP8 against";
      j.peak = peak->second;
      j.modelBytes = element.getIntOrFloatBitWidth() / 8.0;
      judged.push_back(j);
    }
    std::vector<bool> alive(judged.size(), true);
    for (bool changed = true; changed;) {
      changed = false;
      llvm::DenseMap<QuantizationKey, int64_t> readers;
      for (size_t i = 0; i < judged.size(); ++i)
        for (const QuantizationKey &key : judged[i].keys)
          if (alive[i] && judged[i].shares)
            ++readers[key];
      for (size_t i = 0; i < judged.size(); ++i) {
        if (!alive[i])
          continue;
        const Judged &j = judged[i];
        double quantized = j.output * j.outputPasses;
        for (int o = 0; o < 2; ++o)
          quantized += j.elements[o] * j.passes[o] /
                       (j.shares ? readers.lookup(j.keys[o]) : 1);
        if (timeFp8Gemm(device, j.shape, j.peak, j.modelBytes, quantized)
                .gain() <= 0) {
          alive[i] = false;
          changed = true;
        }
      }
    }
    SmallVector<std::pair<const Gemm *, Blocks>> kept;
    for (size_t i = 0; i < judged.size(); ++i) {
      if (alive[i]) {
        kept.push_back(chosen[i]);
        continue;
      }
      const Gemm &gemm = *chosen[i].first;
      ParamOp w = paramBehind(gemm.lhs->get());
      dropped.push_back((w ? w : paramBehind(gemm.rhs->get())).getNameAttr());
    }
    chosen = std::move(kept);
    return success();
  }
};
} // namespace

bool weft::Fp8Choice::any() const {
  return uniform != "none" ||
         llvm::any_of(layers, [](const std::string &r) { return r != "none"; });
}

bool weft::Fp8Choice::anyDelayed() const {
  auto delayed = [](const std::string &r) { return r == "tensorwise-delayed"; };
  return delayed(uniform) || llvm::any_of(layers, delayed);
}

llvm::Expected<Fp8Choice> weft::parseFp8(StringRef text) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        "FP8 recipe '" + text.str() + "': " + why.str() +
        " (supported: none, tensorwise, tensorwise-delayed, rowwise, "
        "blockwise, mxfp8, or a recipe per layer such as "
        "none,tensorwise*30,none)");
  };
  Fp8Choice choice;
  if (parseRecipe(text)) {
    choice.uniform = text.str();
    return choice;
  }
  llvm::Expected<std::vector<std::string>> layers = parseLayerRuns(
      text, [](StringRef name) { return parseRecipe(name).has_value(); },
      "recipe");
  if (!layers)
    return fail(llvm::toString(layers.takeError()));
  choice.layers = std::move(*layers);
  return choice;
}

llvm::Error weft::checkFp8Options(const Fp8Options &options, StringRef flag) {
  // The pass's message names its option ("history must be ..."); weftc's
  // names its flag ("--fp8-history: must be ...").
  auto bad = [&](StringRef suffix, StringRef option, const Twine &body) {
    std::string text =
        flag.empty()
            ? (option.empty() ? body.str() : (option + " " + body).str())
            : (flag + suffix + ": " + body).str();
    return llvm::createStringError(text);
  };
  if (llvm::Expected<Fp8Choice> choice = parseFp8(options.recipe); !choice)
    return bad("", "", llvm::toString(choice.takeError()));
  SmallVector<StringRef> names;
  StringRef(options.keep).split(names, ',', -1, /*KeepEmpty=*/false);
  for (StringRef name : names)
    if (!llvm::is_contained({"head", "first", "last", "none"}, name.trim()))
      return bad("-keep", "",
                 "the FP8 keep list names '" + name.trim() +
                     "'; it takes head, first, last or none");
  if (options.minDim < 0)
    return bad("-min-dim", "min-dim",
               llvm::formatv("must be at least 0, not {0}", options.minDim));
  if (options.history < 1 || options.history > 1 << 20)
    return bad(
        "-history", "history",
        llvm::formatv("must be in [1, 2^20] steps, not {0}", options.history));
  if (options.margin < 0 || options.margin > 32)
    return bad("-margin", "margin",
               llvm::formatv("must be in [0, 32], not {0}", options.margin));
  if (!options.plan.empty())
    if (llvm::Expected<Plan> plan = parsePlan(options.plan); !plan)
      return bad("-plan", "", llvm::toString(plan.takeError()));
  return llvm::Error::success();
}

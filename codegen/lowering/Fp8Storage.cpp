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
// casts its shard and gathers the codes, one byte an element; GEMMs that
// read the gathered tensor transposed get a transposing copy of them.
//
// Quantizations with blocks (rowwise, blockwise, mxfp8) keep the values
// path: their scale modes are not cuBLASLt's per-tensor pointers.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

#include <map>

using namespace mlir;

namespace weft::codegen {
namespace {

/// The lhs, rhs and transposes of a matmul.
struct GemmOperands {
  Value lhs, rhs;
  bool transLhs = false, transRhs = false;
};

/// A plain weft.matmul's operands. Epilogue GEMMs are not FP8 GEMMs here:
/// cuBLASLt's epilogues with FP8 operands have type rules of their own
/// (bias types, the GELU aux) no GPU has checked yet, and
/// weft-gemm-epilogue leaves GEMMs of per-tensor FP8 operands plain.
std::optional<GemmOperands> gemmOperands(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op))
    return GemmOperands{mm.getLhs(), mm.getRhs(), mm.getTransposeLhs(),
                        mm.getTransposeRhs()};
  return std::nullopt;
}

/// cuBLASLt's FP8 GEMMs take m, n and k in multiples of 16 (as
/// torch._scaled_mm requires) and write f32 or bf16.
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
  return m % 16 == 0 && n % 16 == 0 && k % 16 == 0 &&
         (out.isF32() || out.isBF16());
}

/// Appends the GEMMs reading `v` (through reshapes, casts between float
/// types, and at most one gather, `gather` once past it, which it records
/// in `views`) to `uses`; false if anything else reads it. A bf16 model
/// casts the quantized f32 values to bf16 for its GEMM: the codes and the
/// scale stand for them exactly, so the GEMM reads them instead. A GPU
/// gathers FP8 codes as 4-byte words: a shard of another size keeps f32.
bool collectGemmUses(Value v,
                     SmallVectorImpl<std::pair<Value, Fp8GemmUse>> &uses,
                     SmallVectorImpl<Operation *> &views,
                     AllGatherOp gather = AllGatherOp()) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
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

} // namespace

void planFp8Storage(func::FuncOp f, ProgramLowering &l) {
  // Candidates: per-tensor quantizations only GEMMs read; then, until
  // nothing changes, drop those with a GEMM whose other operand is not a
  // candidate (cuBLASLt multiplies FP8 by FP8) or is E5M2 as well.
  llvm::MapVector<Operation *, Fp8Plan> plans;
  f.walk([&](Fp8QuantizeOp q) {
    if (!perTensorQuantizationOf(q.getResult()))
      return;
    Fp8Plan plan;
    if (collectGemmUses(q.getResult(), plan.uses, plan.views) &&
        !plan.uses.empty())
      plans.insert({q, std::move(plan)});
  });
  auto e5m2 = [](Fp8QuantizeOp q) {
    return isa<Float8E5M2Type>(q.getFormat());
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = plans.begin(); it != plans.end(); ++it) {
      auto q = cast<Fp8QuantizeOp>(it->first);
      bool keep = llvm::all_of(it->second.uses, [&](const auto &use) {
        GemmOperands g = *gemmOperands(use.second.matmul);
        Fp8QuantizeOp other =
            perTensorQuantizationOf(use.second.lhs ? g.rhs : g.lhs);
        return other && plans.count(other) && !(e5m2(q) && e5m2(other));
      });
      if (!keep) {
        plans.erase(it);
        changed = true;
        break;
      }
    }
  }
  for (auto &[op, plan] : plans)
    l.planFp8Cast(op, std::move(plan));
}

LogicalResult lowerFp8Cast(Fp8QuantizeOp op, const Fp8Plan &plan,
                           ProgramLowering &l) {
  OpBuilder &b = l.builder();
  // On a GPU a bf16 input is read as stored (SchedTarget::keepsStored).
  Value x = l.read(op, op.getInput()), amax = l.read(op, op.getAmax());
  Type stored = llvm::cast<sched::BufferType>(x.getType()).getElementType();
  Type format = op.getFormat();
  auto shapeOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape();
  };
  // One cast per layout: the value's own (any reshape views it), and each
  // transposed shape a GEMM reads.
  auto cast = [&](ArrayRef<int64_t> shape, bool transpose) -> Fp8Operand {
    SmallVector<int64_t> outShape(shape);
    if (transpose)
      std::swap(outShape[outShape.size() - 2], outShape.back());
    Fp8Operand o;
    o.codes = l.alloc(outShape, format);
    o.scaleInv = l.alloc({1}, b.getF32Type());
    sched::Fp8CastOp::create(
        b, op.getLoc(), l.view(x, 0, shape, stored), amax, o.codes, o.scaleInv,
        transpose ? b.getUnitAttr() : UnitAttr(), b.getStringAttr("compute"));
    return o;
  };
  // The transposing copy of a gathered [..., R, C] into [..., C, R].
  auto transposeCodes = [&](Value from, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> outShape(shape);
    std::swap(outShape[outShape.size() - 2], outShape.back());
    Value to = l.alloc(outShape, format);
    int64_t rows = shape[shape.size() - 2], cols = shape.back();
    int64_t batch = ShapedType::getNumElements(shape) / (rows * cols);
    sched::CopyOp::create(
        b, op.getLoc(), from, to, b.getDenseI64ArrayAttr({batch, rows, cols}),
        b.getDenseI64ArrayAttr({0, rows * cols, cols, 1}),
        b.getDenseI64ArrayAttr({0, rows * cols, 1, rows}), FlatSymbolRefAttr(),
        ArrayAttr(), IntegerAttr(), b.getStringAttr("compute"));
    return to;
  };
  std::optional<Fp8Operand> plain;
  auto plainCodes = [&] {
    if (!plain)
      plain = cast(shapeOf(op.getResult()), false);
    return *plain;
  };
  llvm::SmallDenseMap<ArrayRef<int64_t>, Fp8Operand> transposed;
  llvm::DenseMap<Operation *, Value> gathered;
  std::map<std::pair<Operation *, SmallVector<int64_t>>, Value>
      gatheredTransposed;
  for (const auto &[v, use] : plan.uses) {
    ArrayRef<int64_t> shape = shapeOf(v);
    if (AllGatherOp gather = use.gather) {
      // The shard's codes gathered (once per gather), viewed or transposed
      // as the GEMM reads them; every rank's scale is the same.
      Fp8Operand shard = plainCodes();
      Value &whole = gathered[gather];
      if (!whole) {
        whole = l.alloc(shapeOf(gather.getResult()), format);
        gatherInto(l, gather,
                   l.view(shard.codes, 0, shapeOf(gather.getInput()), format),
                   whole);
      }
      Value codes = l.view(whole, 0, shape, format);
      if (use.transposed) {
        Value &t = gatheredTransposed[{gather.getOperation(),
                                       SmallVector<int64_t>(shape)}];
        if (!t)
          t = transposeCodes(codes, shape);
        codes = t;
      }
      l.setFp8Operand(v, use.transposed, {codes, shard.scaleInv});
      continue;
    }
    if (!use.transposed) {
      Fp8Operand o = plainCodes();
      l.setFp8Operand(v, false,
                      {l.view(o.codes, 0, shape, format), o.scaleInv});
      continue;
    }
    auto it = transposed.find(shape);
    if (it == transposed.end())
      it = transposed.insert({shape, cast(shape, true)}).first;
    l.setFp8Operand(v, true, it->second);
  }
  return success();
}

} // namespace weft::codegen

//===- Matmul.cpp - matmuls and epilogue GEMMs as sched.gemm --------------===//
//
// weft.matmul multiplies the last two dimensions, batched over the rest
// (lhs [..., M, K] or, transposed, [..., K, M]; rhs likewise or one [K, N]
// weight for every batch). A batch by one weight is one GEMM of B·M rows,
// which beats B small ones; otherwise batch strides walk the batches.
//
//===----------------------------------------------------------------------===//

#include "codegen/lowering/Lowering.h"

using namespace mlir;

namespace weft::codegen {
namespace {

struct GemmLayout {
  int64_t m, n, k, batch, strideA, strideB, strideC;
  bool transA, transB;
};

GemmLayout layoutOf(Value lhs, Value rhs, Value result, bool transA,
                    bool transB) {
  ArrayRef<int64_t> a = cast<ShapedType>(lhs.getType()).getShape();
  ArrayRef<int64_t> b = cast<ShapedType>(rhs.getType()).getShape();
  size_t ar = a.size(), br = b.size();
  GemmLayout g;
  g.transA = transA;
  g.transB = transB;
  g.m = transA ? a[ar - 1] : a[ar - 2];
  g.k = transA ? a[ar - 2] : a[ar - 1];
  g.n = transB ? b[br - 2] : b[br - 1];
  int64_t c = cast<ShapedType>(result.getType()).getNumElements();
  g.batch = g.m * g.n == 0 ? 1 : c / (g.m * g.n);
  g.strideA = ar > 2 ? g.m * g.k : 0;
  g.strideB = br > 2 ? g.k * g.n : 0;
  g.strideC = g.m * g.n;
  if (g.strideB == 0 && !transA) {
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = g.strideC = 0;
  }
  return g;
}

LogicalResult emitGemm(Operation *op, ProgramLowering &l, Value lhs, Value rhs,
                       Value result, GemmLayout g, sched::Epilogue epilogue,
                       Value bias, Value aux) {
  // m, n and k are at least 1: weft values have positive dimensions.
  // Operands kept as FP8 codes (Fp8Storage.cpp) come k-contiguous: A
  // [m, k], B [n, k], each with its scale.
  auto fp8 = fp8OperandPair(op, l, lhs, g.transA, rhs, !g.transB);
  if (failed(fp8))
    return failure();
  auto [fa, fb] = *fp8;
  Value a, b, scaleA, scaleB;
  if (fa) {
    a = fa->codes, scaleA = fa->scaleInv;
    b = fb->codes, scaleB = fb->scaleInv;
    g.transA = false;
    g.transB = true;
  } else {
    a = l.read(op, lhs), b = l.read(op, rhs);
  }
  Value c = l.write(op, result);
  OpBuilder &builder = l.builder();
  // Block scales say how (per tensor is the default).
  ArrayAttr scaleModes = fa ? fp8ScaleModes(builder, *fa, *fb) : ArrayAttr();
  int64_t lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  sched::GemmOp::create(
      builder, op->getLoc(), a, b, c, bias, aux, scaleA, scaleB,
      builder.getDenseI64ArrayAttr({g.m, g.n, g.k}),
      builder.getI64IntegerAttr(g.batch),
      builder.getDenseI64ArrayAttr({lda, ldb, g.n}),
      builder.getDenseI64ArrayAttr({g.strideA, g.strideB, g.strideC}),
      sched::EpilogueAttr::get(builder.getContext(), epilogue),
      g.transA ? builder.getUnitAttr() : UnitAttr(),
      g.transB ? builder.getUnitAttr() : UnitAttr(), UnitAttr(), scaleModes,
      builder.getStringAttr("compute"));
  return success();
}

LogicalResult lowerMatmul(MatmulOp op, ProgramLowering &l) {
  GemmLayout g = layoutOf(op.getLhs(), op.getRhs(), op.getResult(),
                          op.getTransposeLhs(), op.getTransposeRhs());
  return emitGemm(op, l, op.getLhs(), op.getRhs(), op.getResult(), g,
                  sched::Epilogue::none, Value(), Value());
}

LogicalResult lowerMatmulEpilogue(MatmulEpilogueOp op, ProgramLowering &l) {
  GemmLayout g = layoutOf(op.getLhs(), op.getRhs(), op.getResult(),
                          /*transA=*/false, op.getTransposeRhs());
  auto epilogue = sched::symbolizeEpilogue(stringifyEpilogue(op.getEpilogue()));
  if (!epilogue)
    return op.emitOpError("has an epilogue sched does not know");
  // bias_gelu writes the pre-GELU sum as its second result; dgelu reads
  // it back as its preactivation operand.
  Value bias = op.getBias() ? l.read(op, op.getBias()) : Value();
  Value aux = op.getAux()             ? l.write(op, op.getAux())
              : op.getPreactivation() ? l.read(op, op.getPreactivation())
                                      : Value();
  return emitGemm(op, l, op.getLhs(), op.getRhs(), op.getResult(), g, *epilogue,
                  bias, aux);
}

} // namespace

void populateMatmulLowerings(LoweringTable &table) {
  addLowering(table, lowerMatmul);
  addLowering(table, lowerMatmulEpilogue);
}

} // namespace weft::codegen

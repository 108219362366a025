//===- GemmEpilogue.cpp - bias / GELU / GELU gradient into the GEMM -------===//
//
// A GPT-style MLP leaves, after autodiff, a GEMM whose product is read once
// by a bias add (through a broadcast of the bias to the whole product), a
// GELU, and in the backward a GEMM whose product goes straight into
// gelu_grad. cuBLASLt applies these in the GEMM's epilogue, while the
// product is still in registers: no broadcast tensor, no second pass over
// the output. This pass states which GEMMs may do that; the runtimes run
// weft.matmul_epilogue (one cuBLASLt call on the GPU, a GEMM and a loop on
// the CPU).
//
//===----------------------------------------------------------------------===//

#include "passes/fusion/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_GEMMEPILOGUE
#include "passes/fusion/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// cuBLASLt's aux matrix (the GELU input) has the output's row width as its
/// leading dimension, which must be a multiple of 8 elements.
constexpr int64_t kAuxAlignment = 8;

/// A matmul the GPU can give an epilogue: by a rank-2 weight, lhs not
/// transposed, in a GPU GEMM type. Returns the output's last dimension.
std::optional<int64_t> epilogueWidth(MatmulOp mm) {
  auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
  Type elt = rhs.getElementType();
  if (mm.getTransposeLhs() || rhs.getRank() != 2 ||
      !(elt.isF32() || elt.isBF16()))
    return std::nullopt;
  return cast<RankedTensorType>(mm.getType()).getShape().back();
}

/// The [N] bias that `v` broadcasts along the last dimension of `product`.
Value broadcastBias(Value v, Value product) {
  auto bc = v.getDefiningOp<BroadcastOp>();
  if (!bc || bc.getType() != product.getType())
    return nullptr;
  auto out = cast<RankedTensorType>(product.getType());
  auto in = cast<RankedTensorType>(bc.getInput().getType());
  if (in.getRank() != 1 || in.getShape()[0] != out.getShape().back() ||
      in.getElementType() != out.getElementType() ||
      bc.getDims() != ArrayRef<int64_t>{out.getRank() - 1})
    return nullptr;
  return bc.getInput();
}

SmallVector<GeluOp> geluUsers(Value v) {
  SmallVector<GeluOp> gelus;
  for (Operation *user : v.getUsers())
    if (auto g = dyn_cast<GeluOp>(user))
      gelus.push_back(g);
  return gelus;
}

/// Builds the epilogue op at `at` for `mm`'s operands.
MatmulEpilogueOp build(Operation *at, MatmulOp mm, Epilogue kind, Value bias,
                       Value pre) {
  OpBuilder b(at);
  Type type = mm.getType();
  SmallVector<Type> results = {type};
  if (kind == Epilogue::Gelu || kind == Epilogue::BiasGelu)
    results.push_back(type);
  return MatmulEpilogueOp::create(b, at->getLoc(), results, mm.getLhs(),
                                  mm.getRhs(), bias, pre, kind,
                                  mm.getTransposeRhs());
}

/// Rewrites the pattern around `mm`, if any; true when it did.
bool fold(MatmulOp mm) {
  // A GEMM of FP8 operands stays plain: FP8 storage multiplies it as FP8,
  // and cuBLASLt's epilogues with FP8 operands (bias types, the GELU aux)
  // are not checked on a GPU yet.
  if (fp8GemmOperandOf(mm.getLhs()) || fp8GemmOperandOf(mm.getRhs()))
    return false;
  std::optional<int64_t> width = epilogueWidth(mm);
  if (!width)
    return false;
  bool auxOk = *width % kAuxAlignment == 0;
  Value product = mm.getResult();

  if (product.hasOneUse()) {
    Operation *user = *product.getUsers().begin();
    // Backward: gelu_grad(h, dy) with dy this product.
    if (auto grad = dyn_cast<GeluGradOp>(user)) {
      if (!auxOk || grad.getRhs() != product || grad.getLhs() == product)
        return false;
      auto op = build(grad, mm, Epilogue::DGelu, nullptr, grad.getLhs());
      grad.replaceAllUsesWith(op.getResult());
      grad.erase();
      mm.erase();
      return true;
    }
    // Forward: product + broadcast(bias), then maybe gelu.
    if (auto add = dyn_cast<AddOp>(user)) {
      Value other = add.getLhs() == product ? add.getRhs() : add.getLhs();
      Value bias = other == product ? nullptr : broadcastBias(other, product);
      if (!bias)
        return false;
      SmallVector<GeluOp> gelus = geluUsers(add.getResult());
      bool withGelu = !gelus.empty() && auxOk;
      auto op = build(add, mm, withGelu ? Epilogue::BiasGelu : Epilogue::Bias,
                      bias, nullptr);
      if (withGelu)
        for (GeluOp g : gelus) {
          g.replaceAllUsesWith(op.getResult());
          g.erase();
        }
      add.replaceAllUsesWith(withGelu ? op.getAux() : op.getResult());
      add.erase();
      mm.erase();
      if (Operation *bc = other.getDefiningOp(); bc && bc->use_empty())
        bc->erase();
      return true;
    }
  }
  // Forward without a bias: gelu(product); the product's other users (the
  // backward's gelu_grad) read the aux copy of it.
  SmallVector<GeluOp> gelus = geluUsers(product);
  if (gelus.empty() || !auxOk)
    return false;
  auto op = build(mm, mm, Epilogue::Gelu, nullptr, nullptr);
  for (GeluOp g : gelus) {
    g.replaceAllUsesWith(op.getResult());
    g.erase();
  }
  mm.replaceAllUsesWith(op.getAux());
  mm.erase();
  return true;
}
} // namespace

int64_t weft::foldGemmEpilogues(func::FuncOp func) {
  SmallVector<MatmulOp> matmuls;
  func.walk([&](MatmulOp mm) { matmuls.push_back(mm); });
  int64_t folded = 0;
  for (MatmulOp mm : matmuls)
    folded += fold(mm);
  return folded;
}

namespace {
struct GemmEpiloguePass : weft::impl::GemmEpilogueBase<GemmEpiloguePass> {
  void runOnOperation() override { foldGemmEpilogues(getOperation()); }
};
} // namespace

//===- Passes.td - operator fusion -------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_FUSION_TD
#define WEFT_PASSES_FUSION_TD

include "mlir/Pass/PassBase.td"

def FuseElementwise : Pass<"weft-fusion-group", "::mlir::func::FuncOp"> {
  let summary = "Group chains of elementwise ops into weft.fused kernels";
  let description = [{
    Walks the function in order and grows groups of elementwise weft ops
    (ops with the Elementwise trait whose operands and result all have one
    f32 tensor type; also broadcasts of 0-d f32 values and casts of bf16/f16
    values to f32, which the kernel reads as one value or as stored): an op
    joins its operands' producers' groups, merged into the earliest when
    every merged member's other operands are defined before that group's
    first op, else one of them under that rule, which keeps groups free of
    cycles; splat constants used by a group are copied into it, and a
    widening cast read by several groups is cloned into each.
    Each group of two or more ops becomes a `weft.fused` op placed where the
    group's first op was, taking the group's outside operands and yielding
    the results used outside it. GEMMs, attention, norms and reductions stay
    outside, as library or hand-written kernels.

    With `single-ops` (what `weftc compile` uses), an op that
    joins no group becomes a group of one, and bf16/f16 elementwise ops
    become groups of one (kernels compute in f32; the runtime widens their
    operands and rounds their results), so every elementwise op of a
    bundle is a generated kernel (the sched lowering needs them so).
  }];
  let options = [
    Option<"singleOps", "single-ops", "bool", /*default=*/"false",
           "Make every remaining elementwise op a group of its own">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def GemmEpilogue : Pass<"weft-gemm-epilogue", "::mlir::func::FuncOp"> {
  let summary = "Fold a linear layer's bias, GELU and GELU gradient into its GEMM";
  let description = [{
    Rewrites, for GPU bundles (before `weft-fusion-group`), the patterns a
    linear layer and its gradient leave after autodiff into
    `weft.matmul_epilogue`, which the GPU runs as one cuBLASLt call with an
    epilogue instead of a GEMM, a broadcast of the bias to the whole output
    and an elementwise kernel reading both:

    - `add(matmul(x, w), broadcast(b))` -> `bias`; followed by `gelu` ->
      `bias_gelu`, whose aux result (the GELU input) replaces the add for
      its other users (the backward's `gelu_grad`).
    - `gelu(matmul(x, w))` -> `gelu`, the aux replacing the product.
    - `gelu_grad(h, matmul(dy, w))` -> `dgelu` with preactivation `h`.

    Only matmuls by a rank-2 weight, without `transpose_lhs`, whose product
    has no other use than the pattern's, in f32 or bf16 (the GPU's GEMM
    types). The GELU kinds also need N (the output's last dimension) to be
    a multiple of 8: cuBLASLt reads and writes the aux matrix with that
    leading dimension.
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_FUSION_TD

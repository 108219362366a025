//===- Passes.td - operator fusion -------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_FUSION_TD
#define WEFT_PASSES_FUSION_TD

include "mlir/Pass/PassBase.td"

def FuseElementwise : Pass<"weft-fusion-group", "::mlir::func::FuncOp"> {
  let summary = "Group chains of elementwise ops into weft.fused kernels";
  let description = [{
    Walks the function in order and grows groups of elementwise weft ops
    (ops with the Elementwise trait whose operands and result all have one
    f32 tensor type): an op joins the group of one of its operands' producers when every
    other operand is defined before that group's first op, which keeps the
    group free of cycles; splat constants used by a group are copied into it.
    Each group of two or more ops becomes a `weft.fused` op placed where the
    group's first op was, taking the group's outside operands and yielding
    the results used outside it. GEMMs, attention, norms and reductions stay
    outside, as library or hand-written kernels.

    With `single-ops` (what `weftc compile --target cuda` uses), an op that
    joins no group becomes a group of one, and bf16/f16 elementwise ops
    become groups of one (kernels compute in f32; the runtime widens their
    operands and rounds their results), so every elementwise op of a GPU
    bundle is a generated kernel.
  }];
  let options = [
    Option<"singleOps", "single-ops", "bool", /*default=*/"false",
           "Make every remaining elementwise op a group of its own">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_FUSION_TD

//===- Passes.td - composite-op expansion passes -----------*- tablegen -*-===//

#ifndef WEFT_PASSES_DECOMPOSE_TD
#define WEFT_PASSES_DECOMPOSE_TD

include "mlir/Pass/PassBase.td"

def Decompose : Pass<"weft-decompose"> {
  let summary = "Expand composite weft ops into primitive weft ops";
  let description = [{
    Replaces every op implementing `DecomposableOpInterface` (attention,
    layer_norm, rms_norm, softmax, cross_entropy, topk_gating, gelu, silu)
    by its expansion into primitives, repeating until none is left, so that
    composites created by an expansion (attention's softmax) are expanded
    too. With `ops=` only the named ops are expanded and the rest are kept
    whole, which is how a backend keeps the composites it has a fused kernel
    for. An op that cannot be expanded gets a diagnostic and the pass fails.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Op names to expand, e.g. weft.attention (default: all)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_DECOMPOSE_TD

//===- WeftAttrs.td - weft attributes and enums ------------*- tablegen -*-===//

#ifndef WEFT_ATTRS_TD
#define WEFT_ATTRS_TD

include "dialects/weft/IR/WeftDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Weft_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Normal", 2, "normal">,
    I32EnumAttrCase<"Uniform", 3, "uniform">
  ]> {
  let cppNamespace = "::weft";
}

def Weft_ReduceKind : I32EnumAttr<"ReduceKind", "how a collective combines", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">
  ]> {
  let cppNamespace = "::weft";
}

def Weft_Epilogue : I32EnumAttr<"Epilogue",
    "what a GEMM does to its product before storing it", [
    I32EnumAttrCase<"Bias", 0, "bias">,
    I32EnumAttrCase<"Gelu", 1, "gelu">,
    I32EnumAttrCase<"BiasGelu", 2, "bias_gelu">,
    I32EnumAttrCase<"DGelu", 3, "dgelu">
  ]> {
  let cppNamespace = "::weft";
}

def Weft_ShardingAttr : AttrDef<Weft_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor's dimensions split over mesh axes";
  let description = [{
    `mesh` names a `weft.mesh`; `dims` has one list per tensor dimension, the
    mesh axes that dimension is split over, major to minor (empty: the
    dimension is replicated). Axes not named anywhere replicate the whole
    tensor. A dimension split over axes of sizes a, b, ... must be divisible
    by a * b * ...; an axis splits at most one dimension.

    Values carry shardings in the `weft.sharding` attribute, an array with one
    entry per op result (or one per function argument, on the argument).

    ```mlir
    %y = weft.matmul %x, %w {weft.sharding = [#weft.sharding<@mesh, [["dp"], [], ["tp"]]>]}
        : tensor<8x16x64xf32>, tensor<64x256xf32>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh, "::mlir::ArrayAttr":$dims);
  let assemblyFormat = "`<` $mesh `,` $dims `>`";
}

#endif // WEFT_ATTRS_TD

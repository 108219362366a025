//===- WeftAttrs.td - weft attributes and enums ------------*- tablegen -*-===//

#ifndef WEFT_ATTRS_TD
#define WEFT_ATTRS_TD

include "mlir/IR/EnumAttr.td"

def Weft_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Normal", 2, "normal">,
    I32EnumAttrCase<"Uniform", 3, "uniform">
  ]> {
  let cppNamespace = "::weft";
}

#endif // WEFT_ATTRS_TD

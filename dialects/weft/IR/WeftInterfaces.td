//===- WeftInterfaces.td - weft op interfaces --------------*- tablegen -*-===//

#ifndef WEFT_INTERFACES_TD
#define WEFT_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Weft_DecomposableOpInterface : OpInterface<"DecomposableOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    A composite op (attention, norms, softmax, cross-entropy, gating, gelu,
    silu) that can be expanded into primitive `weft` ops computing the same
    function. Passes may keep the composite whole (to call a fused kernel) or
    expand it (`weft-decompose`). The expansion must agree with the
    reference evaluator's result for the composite up to rounding.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the primitive ops at the builder's insertion point and returns
        the values that replace this op's results, in order.
      }],
      "::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>", "decompose",
      (ins "::mlir::OpBuilder &":$builder)>
  ];
}

#endif // WEFT_INTERFACES_TD

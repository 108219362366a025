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

def Weft_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op that reverse-mode autodiff (`weft-autodiff`) can differentiate.
    Given the gradient of the loss with respect to each result (null where a
    result does not reach the loss), the op builds the ops that compute the
    gradient with respect to each operand, at the builder's insertion point.
    Rules may read the op's operands and results (the forward values); a
    composite's rule uses its own efficient form (attention recomputes its
    probabilities from the saved log-sum-exp, cross-entropy fuses softmax).
  }];
  let methods = [
    InterfaceMethod<[{
        Returns one value per operand: its gradient, or null where the operand
        is not differentiable (integer ids, indices) or gets zero gradient.
        `resultGrads` has one entry per result, null meaning zero.
      }],
      "::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads)>
  ];
}

def Weft_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op whose dimensions may be split across devices: its sharding rule
    (see `ShardingRule.h`) maps each operand and result dimension to a
    factor. Ops without the interface are placed whole (replicated).
  }];
  let methods = [
    InterfaceMethod<"The op's sharding rule.", "::weft::ShardingRule",
                    "getShardingRule", (ins)>
  ];
}

#endif // WEFT_INTERFACES_TD

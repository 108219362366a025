//===- WeftDialect.td - the weft graph dialect -------------*- tablegen -*-===//
//
// The `weft` dialect holds a model as a dataflow graph on builtin ranked
// tensors. Its verifiers and the reference evaluator define what a model
// means; every later pass is checked against them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_TD
#define WEFT_DIALECT_TD

include "mlir/IR/OpBase.td"

def Weft_Dialect : Dialect {
  let name = "weft";
  let cppNamespace = "::weft";
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let summary = "Dataflow graphs of large-model training jobs";
  let description = [{
    A `weft` graph is a `func.func` whose body is made of `weft` ops on builtin
    ranked tensors. Floating-point values use one of f32, bf16, f16, f8E4M3FN
    or f8E5M2; token ids, labels and expert indices are signless i32 or i64.
    Parameters are declared inside the function with `weft.param`, so the
    function's arguments are only the data that changes from step to step.

    Every op states its exact semantics in its description. Unless an op says
    otherwise it computes in at least fp32 and rounds its result once, to the
    nearest value of the result element type (ties to even). The reference
    evaluator (`compiler/reference/`) implements exactly these rules.
  }];
}

class Weft_Op<string mnemonic, list<Trait> traits = []>
    : Op<Weft_Dialect, mnemonic, traits>;

#endif // WEFT_DIALECT_TD

//===- Passes.td - memory planning -------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_MEMORY_TD
#define WEFT_PASSES_MEMORY_TD

include "mlir/Pass/PassBase.td"

def MemoryPlan : Pass<"weft-memory-plan", "::mlir::func::FuncOp"> {
  let summary = "Assign every intermediate tensor a static offset in one arena";
  let description = [{
    Plans the memory of a function executed in program order. Each result of
    an op (other than `weft.param` and `weft.constant`, which the runtime
    keeps elsewhere) is live from its definition to its last use; a
    `weft.reshape` or `weft.copy_to_group` result is a view of its operand
    and shares its buffer, so the pair is live as long as either is (the
    runtime points a view of a parameter at the parameter itself). A value a `weft.assign` writes
    back lives to the end of the function, when assigns take effect.
    Buffers are placed largest first
    at the lowest offset that overlaps no placed buffer with an intersecting
    lifetime (64-byte aligned), so two buffers share bytes only if their
    lifetimes are disjoint.

    Each planned op gets `weft.offsets` (one byte offset per result) and the
    function gets `weft.arena_bytes`, the peak. Function arguments are
    inputs the runtime supplies in its own buffers.

    ```mlir
    %2 = weft.add %0, %1 {weft.offsets = [0]} : tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_MEMORY_TD

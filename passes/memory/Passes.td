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

def SchedPlanMemory : Pass<"weft-sched-plan-memory",
                            "::weft::sched::ProgramOp"> {
  let summary = "Give a sched program's buffers live ranges and arena offsets";
  let description = [{
    Plans an unplanned `sched.program` (from weft-lower-to-sched): each
    `sched.alloc` lives from the first to the last instruction that uses it
    or a view of it, or to the end of the program if an output or a
    `sched.assign` reads it; allocs no instruction uses are removed. A
    buffer an instruction on another stream than the program's first uses
    lives until the first stream waits for an event recorded after that
    instruction (it may still be in flight until then). Buffers
    are then placed as weft-memory-plan places them (largest first, lowest
    offset overlapping no buffer alive at the same time), at multiples of
    the program's `align`, and the program's `arena` becomes the peak. The
    program verifier then checks the plan it wrote. A program that is
    already planned is left alone.

    ```mlir
    %0 = sched.alloc offset(0) live(0, 2) : !sched.buffer<8xf32>
    ```
  }];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

#endif // WEFT_PASSES_MEMORY_TD

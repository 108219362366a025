//===- Passes.td - memory planning -------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_MEMORY_TD
#define WEFT_PASSES_MEMORY_TD

include "mlir/Pass/PassBase.td"

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
    are then placed largest first, each at the lowest offset overlapping
    no buffer alive at the same time (Placement.h), at multiples of
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

//===- Passes.td - passes that compose the compiler's layers -*- tablegen -*-===//

#ifndef WEFT_COMPILER_PASSES_TD
#define WEFT_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def SchedArenas : Pass<"weft-sched-arenas", "::mlir::ModuleOp"> {
  let summary = "Give each fused weft program the arena its sched program "
                "plans to";
  let description = [{
    The memory a training step needs is decided once, by the sched memory
    plan (weft-sched-plan-memory) of the programs a bundle holds: what the
    runtimes allocate. The weft programs a report, a fit check or the
    recomputation budget reads are one lowering earlier, and that lowering
    adds buffers the weft values do not show: a gradient bucket that lives
    until its last gradient is read, f32 copies of narrow values, FP8 codes
    in place of dequantized values, GPU attention scratch, streams that
    keep a buffer alive until an event. So this pass lowers a copy of the
    module as a bundle is lowered (each remaining narrow elementwise op a
    kernel of its own, weft-lower-to-sched with the same target and
    options, on cuda the stream passes, weft-sched-plan-memory) and sets
    `weft.arena_bytes` on each function to its program's arena. The module
    itself is not otherwise changed.

    ```mlir
    func.func @step(...) attributes {weft.arena_bytes = 1579524 : i64}
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "What the bundle runs on: cpu or cuda">,
    Option<"attentionScratchMb", "attention-scratch-mb", "int64_t",
           /*default=*/"4096",
           "GPU attention materialises scores up to this many MiB">,
    Option<"fp8Storage", "fp8-storage", "std::string", /*default=*/"\"auto\"",
           "FP8 GEMM operands as FP8 codes and scales: auto (on for cuda), "
           "on or off">,
    Option<"overlapCollectives", "overlap-collectives", "bool",
           /*default=*/"true",
           "On cuda, prefetch parameter gathers and defer reduction readers">
  ];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

#endif // WEFT_COMPILER_PASSES_TD

//===- Passes.td - placement: plans, propagation, partitioning -*- tablegen -*-===//

#ifndef WEFT_PASSES_SHARDING_TD
#define WEFT_PASSES_SHARDING_TD

include "mlir/Pass/PassBase.td"

def ApplyPlan : Pass<"weft-apply-plan", "::mlir::ModuleOp"> {
  let summary = "Declare the mesh of a plan and seed shardings from it";
  let description = [{
    Reads a plan such as `dp=2` (see `Plan.h`), declares `weft.mesh @mesh`
    with the plan's axes of size above one, and annotates @forward's inputs
    (`weft.input`: tokens, labels) with their batch dimension split over
    `dp`. Other strategies seed parameters the same way (data, not code).
    A batch that `dp` does not divide is an error at the input.
  }];
  let options = [
    Option<"plan", "plan", "std::string", /*default=*/"\"\"",
           "The plan, e.g. dp=2 (axes dp, tp, pp, ep; zero=0..3; sp=on|off)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def ShardingPropagate : Pass<"weft-sharding-propagate", "::mlir::func::FuncOp"> {
  let summary = "Spread shardings from annotated values through op rules";
  let description = [{
    Starting from the `weft.sharding` annotations on function arguments and op
    results (which stay fixed: user annotations outrank propagation), visits
    every op with a sharding rule forwards and backwards until nothing
    changes. At each op a factor takes the axes of the first dimension mapped
    to it that is split (results before operands); every unsplit dimension
    mapped to that factor then splits the same way, if the size divides and
    the value does not use those axes already. Propagated shardings are
    written as `weft.sharding` on op results that split. A fixed value whose
    split disagrees with its op's choice gets a warning: the partitioner will
    reshard it.
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def Partition : Pass<"weft-partition", "::mlir::func::FuncOp"> {
  let summary = "Rewrite a sharded function into the program of one rank";
  let description = [{
    Turns a function annotated with `weft.sharding` into the SPMD program every
    rank runs: values get their local shapes and collectives appear as ops.
    Per op, the factors take the split of its results (reduction factors that
    of its operands); an operand split differently is all-gathered, a partial
    sum is all-reduced before use, and a value the same on every rank of an
    axis that enters computation differing along it passes through
    `weft.copy_to_group`, so autodiff sums its gradient (the data-parallel
    gradient all-reduce). Splitting a reduction factor leaves a partial
    result. The output named `loss` is made the same on every rank (all-reduce,
    by mean for mean reductions); other outputs stay split. Arguments and
    results then carry `weft.shard_of`: the global sharding the local value
    is one rank's block of (what the runtime cuts inputs by).
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def PartitionOptimizer : Pass<"weft-partition-optimizer", "::mlir::ModuleOp"> {
  let summary = "ZeRO-1/2: split the optimizer state and update by partitioning";
  let description = [{
    For each parameter of the step `func` with a `weft.optimizer_shard`
    (weft-apply-plan's ZeRO-1/2), annotates its Adam moments with that split,
    the parameter as replicated, and its gradient (tagged `weft.grad_of` by
    weft-optimizer-adamw) as split for `weft.grad_shard` (ZeRO-2) or else
    replicated; then runs weft-sharding-propagate and weft-partition on the
    step without copy_to_group. The update runs on blocks, the gradient's
    all-reduce becomes a reduce-scatter under ZeRO-2, the parameter's assign
    all-gathers the new blocks. A mixed-precision master already stored
    split keeps its block; under ZeRO-1 its reduce-scattered gradient is
    all-reduced whole and sliced. Records each parameter's held gradient
    elements (`weft.grad_elements`) and removes the `weft.grad_of` tags. A
    split that is not one dimension over axes of its mesh dividing it, or a
    split parameter without tagged gradient or moments, is an error.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"step\"",
           "The training step to partition">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def BucketAllReduce : Pass<"weft-bucket-all-reduce", "::mlir::func::FuncOp"> {
  let summary = "Merge all-reduces over the same group into buckets";
  let description = [{
    Data-parallel training all-reduces every gradient; one collective per
    tensor pays the latency of each. As PyTorch DDP does, this pass merges
    consecutive all-reduces with the same mesh, axes and reduction into one
    variadic `weft.all_reduce` (the runtime packs its operands into one
    buffer) of at most `bucket-mb` MiB, placed where the last member was. A
    member joins only if no use of an earlier member comes before it, so no
    value is read before its bucket runs.
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket in MiB (default 25, as DDP)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def ReshardAfterForward : Pass<"weft-reshard-after-forward", "::mlir::func::FuncOp"> {
  let summary = "Gather ZeRO-3 parameters again for the backward (FSDP)";
  let description = [{
    In a differentiated function, a parameter stored split (ZeRO-3) is
    all-gathered before its forward use; the backward reads it again, which
    would keep every layer's gathered parameter alive from its forward use to
    its backward use. As FSDP's reshard-after-forward does, this pass gives
    the backward uses (those after the op defining the loss) their own
    all-gather, placed before the first of them, so each gathered copy lives
    only around its uses: two all-gathers and one reduce-scatter per
    parameter per step.
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

def GatherPerStep : Pass<"weft-gather-per-step", "::mlir::ModuleOp"> {
  let summary = "Gather ZeRO-3 parameters once per step for all micro-batches";
  let description = [{
    With micro-batches (weft-accumulate-gradients), ZeRO-3's gathers in
    @accumulate run once per micro-batch. This pass moves each gather of a
    stored block (and the cast before it in mixed precision) into a new
    program @gather, which the step runs once before its micro-batches and
    which assigns the whole parameter to a state parameter
    `<name>.gathered`; every micro-batch reads that, forward and backward.
    The gradients still reduce-scatter per micro-batch. It is FSDP's
    reshard_after_forward=False: a rank holds its parameters whole for the
    step, in exchange for one gather each instead of one or two per
    micro-batch. Run it instead of weft-reshard-after-forward.

    A parameter whose whole value only one FP8 quantization reads (through
    views; recomputation's copy counts as the same), by maxima @gather can
    compute (from the whole value, parameters @accumulate does not assign
    and constants), is quantized in @gather instead: the quantized values
    go to `<name>.fp8.gathered` and the maxima to
    `<name>.fp8.amax.gathered`, and @accumulate quantizes that state by
    those maxima, which gives the same values. Several quantizations
    (GPT-2's c_attn slices; a row-wise or MXFP8 weight's forward and
    input-gradient blocks) each get their own (`.fp8_1`, ...), while
    together they hold no more bytes than the value: in the value's type,
    or with `fp8-codes` (set where FP8 storage holds them as codes,
    weft::fp8CodeStates) a byte an element where weft-fp8-gather can move
    the gather after the quantization (no shard boundary cuts its blocks);
    their maxima are left out. A backward that re-quantizes in other blocks
    leaves the parameter as it is without `fp8-codes`.
    weft-fp8-gather{func=gather} then moves @gather's gathers after the
    quantizations.
  }];
  let options = [
    Option<"fp8Codes", "fp8-codes", "bool", /*default=*/"false",
           "Count a quantized state a byte an element, as FP8 storage holds "
           "it as codes (on with FP8 storage: target cuda, or fp8-storage=on)">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def SplitRingShifts : Pass<"weft-split-ring-shifts", "::mlir::func::FuncOp"> {
  let summary = "Turn ring shifts into a send and a receive around the work between";
  let description = [{
    Each `weft.ring_shift` (ring attention's key/value blocks under context
    parallelism, forward and backward) becomes a `weft.send` of its input
    placed as soon as the input exists and a `weft.recv` of the same tag
    placed just before the first op that reads the result, so the transfer
    overlaps the block attention between them (in the backward too, where
    autodiff emits a block gradient's shift after the next block's
    gradient): the CPU runtime posts sends without waiting and only a
    receive blocks. Tags count from 2^20 in program order, one per shift,
    apart from the pipeline's. Run after autodiff and the pipeline split, on
    every program.
  }];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_SHARDING_TD

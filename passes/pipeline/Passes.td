//===- Passes.td - pipeline passes -------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_PIPELINE_TD
#define WEFT_PASSES_PIPELINE_TD

include "mlir/Pass/PassBase.td"

def AccumulateGradients : Pass<"weft-accumulate-gradients", "::mlir::ModuleOp"> {
  let summary = "Split a training step into per-micro-batch gradient "
                "accumulation and one update";
  let description = [{
    Gradient accumulation, the plan's `microbatches=M`: runs after
    `weft-autodiff` and before `weft-optimizer-adamw`, on the gradient
    function `func` (the loss, then one `weft.grad`-tagged gradient per
    parameter), whose inputs are one micro-batch. It makes two functions of
    it:

    - `@accumulate` (with `weft.microbatches = M`): the gradient function
      itself, but instead of returning the gradients it adds each to a state
      parameter `<param>.grad_acc` (zeros at first, placed as the parameter
      is) and the loss to `loss.accumulated`, and returns the micro-batch's
      loss. The schedule runs it once per micro-batch.
    - `func` again, now without inputs: it reads the accumulators and
      returns their mean over the M micro-batches (the loss, then the
      gradients, tagged as before) and assigns them zeros for the next step,
      so `weft-optimizer-adamw` builds the update from it unchanged. The
      schedule runs the resulting `@step` once, after the last micro-batch.

    With M micro-batches of equal size the mean of their mean losses is the
    whole batch's mean loss, and so the step's loss and gradients equal the
    whole-batch step's. Gradients reduced across data-parallel ranks are
    reduced in `@accumulate`, once per micro-batch. `microbatches=1` changes
    nothing.

    Dropout in `@accumulate` (`weft.dropout` and attention's) reads the
    state parameter `dropout_microbatch`
    (its `microbatch`, with `microbatches = M`), which `@accumulate` adds 1
    to and `func` sets back to 0: micro-batch k draws the k-th block of the
    step's mask, as the whole batch would, not the same mask as the others.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches per step">,
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "Gradient function to split">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def AssignStages : Pass<"weft-pipeline-assign-stages", "::mlir::ModuleOp"> {
  let summary = "Cut a model's layers into pipeline stages";
  let description = [{
    Pipeline parallelism's placement, on the forward function `func` before
    autodiff: the layers (parameters' `weft.layer`) are cut into `stages`
    contiguous stages whose largest costs least (GEMM and attention FLOPs,
    one per element written for the other ops; the embedding's cost counts
    on the first stage, the head's on the last), or as `boundaries` pins
    them (`0-7,8-15`: layer ranges, in order, covering every layer once).
    Parameters without a layer go to the first stage when the model reads
    them before its first layer (embeddings), else to the last (the final
    norm, the head). Every op gets `weft.stage`: the latest stage among its
    operands', so values move to later stages only; ops reading no stage's
    value get none. The function gets `weft.stages`.

    Errors: no parameter with `weft.layer`, fewer layers than stages, and
    pinned boundaries that overlap, leave layers out or count differently.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Pipeline stages (pp times virtual stages per rank)">,
    Option<"boundaries", "boundaries", "std::string", /*default=*/"\"\"",
           "Pinned layer ranges per stage, e.g. 0-7,8-15 (empty: balance)">,
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "Forward function to cut">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def SliceLayers : Pass<"weft-slice-layers", "::mlir::ModuleOp"> {
  let summary = "Cut a model to its first layers, or to chosen ones";
  let description = [{
    What the planner times a layer by (passes/planner/Planner.h): the model
    with two layers against the model with one. A config builds those
    itself; a model read from .mlir is cut by this pass. On the forward
    function `func` (before autodiff), it keeps the first `layers` layers
    (parameters' `weft.layer`): the ops of the later layers and their
    parameters go, and what read the last layer's output (the final norm,
    the head) reads layer `layers - 1`'s instead. The result is the graph a
    frontend builds for the same model with that many layers, but for what
    combines the layers' side outputs (below), which reads the kept last
    layer's in the dropped layers' place (Mixtral's auxiliary loss keeps
    its mean over the original layer count: the same ops, other values).
    With `keep` (rising from 0, e.g. `keep=0,3`) it keeps those layers
    instead: what read a dropped layer's output reads the kept layer's
    before it (how the planner times a layer of another kind against layer
    0 alone), and a dropped layer's side outputs are read as those of the
    nearest kept layer that leaves the same ones.

    A layer's output is found in program order: after the last op that
    reads the activations with one of the layer's weights (its parameters,
    or what is computed from them alone, as their compute-type casts), the
    first point at which a single live activation (a value computed from
    the function's inputs) is still read with a later layer's weights or
    those after the layers; parameters, and values computed from constants
    alone, as positions or rotary tables, do not count. Failing that (no
    weight follows the layers), the one live activation made in the
    function. A layer's side outputs, activations it makes before its
    output that only what follows the layers reads (a mixture of experts'
    auxiliary losses), are read as the kept last layer's where a dropped
    layer's were. A model
    whose layers pass more than one value on (a second stream, a skip
    connection across layers), whose layers change the stream's type, or
    whose layers leave different side outputs, cannot be cut and is an
    error naming the layer.
  }];
  let options = [
    Option<"layers", "layers", "int64_t", /*default=*/"1",
           "Layers to keep, from the first">,
    ListOption<"keep", "keep", "int64_t",
               "The layers to keep instead (rising, from 0): what read a "
               "dropped layer's output reads the kept one's before it">,
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "Forward function to cut">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def Rebatch : Pass<"weft-rebatch", "::mlir::ModuleOp"> {
  let summary = "Rewrite a model at another micro-batch size";
  let description = [{
    A model read from .mlir is written at one micro-batch: its forward
    function `func` (before autodiff) takes [B, S] token ids first. This
    rewrites it at `batch` sequences, as a frontend builds the same model at
    that size, so the planner can choose the micro-batch and weftc compile
    can take a step's --batch. Every argument with dimensions is data whose
    first dimension is the batch (a 0-d one, as a step counter, is kept).

    The batch is followed through the ops: a value holding it has one
    dimension of outer * B * inner elements (a reshape to [B*S, H] merges it
    with the sequence), which becomes outer * batch * inner. Ops that infer
    their result types are re-inferred; elementwise ops, norms, rope and
    dropout take their input's new shape; a reshape puts the batch where the
    same elements precede it. A broadcast or splat constant that an
    elementwise op pairs with a batched value (a position embedding
    broadcast over the batch, an epsilon) is rebuilt at the new shape; from
    one sequence, any such value is broadcast to the batch. A slice that
    keeps the whole batch grows with it. An expert's capacity is the
    frontend's at the new size where the route carries its
    `weft.capacity_factor` (max(1, ceil(factor * pairs / experts))), else
    scaled with the tokens and rounded up (ceil(capacity * batch / B)); the
    packed rows stay min(pairs, experts * capacity), and what reads them
    follows their count.

    A model it cannot follow is an error naming the op: a reshape that
    splits the batch over dimensions, a slice that cuts it, a concat along
    it, a value paired with the batch that is computed from no input and is
    not a broadcast or splat constant (from B > 1), an op already placed
    (`split`, `microbatches`), fused ops, an argument whose first dimension
    is not the batch, a size past 64 bits, or an op it has no rule for.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Sequences per micro-batch to rewrite the model at (at least 1)">,
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "Forward function to rewrite">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def SplitStages : Pass<"weft-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "Cut the staged training step into per-stage programs with "
                "send/recv and a checked schedule table";
  let description = [{
    Runs after weft-pipeline-assign-stages, weft-autodiff,
    weft-accumulate-gradients and weft-optimizer-adamw, on a module whose
    mesh has a `pp` axis of P ranks, with `chunks` virtual stages per rank
    (stage s on rank s mod P). It replaces @accumulate with
    `@stage<s>.forward` (what the micro-batch's loss needs on stage s) and
    `@stage<s>.backward` (the rest: gradients and their accumulation), and
    @step with `@rank<r>.step` (the update of rank r's parameters). Values
    one stage makes and a later one needs are `weft.send` / `weft.recv`
    pairs (activations forward, their gradients back, each pair its own
    tag); a forward value the same stage's backward needs is returned by
    the forward as `stash.<i>` and taken by the backward as its input of
    that name, in order. The step sums the loss and the squared gradient
    norm over pp, each rank reading zeros for the stages it does not hold.

    The table of `schedule` (gpipe, 1f1b, interleaved, zb-h1, which splits
    the backward into B and W, `@stage<s>.wgrad`) for P ranks, the
    micro-batches of @accumulate and `chunks` is built and proven
    deadlock-free (checkSchedule), then left on the module as
    `weft.pipeline` for weft-lower-to-sched.

    Dropout's micro-batch counter (`dropout_microbatch`, which @accumulate
    counts) becomes each program's own, `dropout_microbatch.<program>`,
    moved on at the program's end and wrapped at M: a stage's programs run
    the micro-batches once each, in order, but interleaved with each other.
    A table that runs a program's micro-batches out of order is refused
    when the step drops.

    What weft-recompute recorded on @accumulate (`weft.recompute`,
    `weft.recompute_flops`, `weft.recompute_layer_flops`,
    `weft.activation_bytes`: the whole model's) goes onto every
    `@stage<s>.backward`, where `--report` and `--recompute budget=` read
    it.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Pipeline schedule: gpipe, 1f1b or interleaved">,
    Option<"chunks", "chunks", "int64_t", /*default=*/"1",
           "Virtual stages per rank (interleaved)">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

#endif // WEFT_PASSES_PIPELINE_TD

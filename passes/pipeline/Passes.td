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
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches per step">,
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "Gradient function to split">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

#endif // WEFT_PASSES_PIPELINE_TD

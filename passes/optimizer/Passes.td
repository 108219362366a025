//===- Passes.td - optimizer passes ------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_OPTIMIZER_TD
#define WEFT_PASSES_OPTIMIZER_TD

include "mlir/Pass/PassBase.td"

def AdamW : Pass<"weft-optimizer-adamw", "::mlir::ModuleOp"> {
  let summary = "Turn a gradient function into an AdamW training step";
  let description = [{
    Takes the gradient function `func` made by `weft-autodiff` (loss, then one
    `weft.grad`-tagged gradient per parameter) and adds the step function
    `out`, which takes two more 0-d f32 inputs, `lr` (this step's learning
    rate, from the run's schedule) and `step` (the 1-based step number), and
    returns the loss and the global gradient norm before clipping:

    ```mlir
    func.func @step(%tokens, %labels, %lr: tensor<f32> {weft.input = "lr"},
                    %step: tensor<f32> {weft.input = "step"})
        -> (tensor<f32> {weft.output = "loss"}, tensor<f32> {weft.output = "grad_norm"})
    ```

    It computes, as PyTorch's `clip_grad_norm_` and `AdamW` do:
      n = sqrt(sum over all gradients of g^2),  g *= min(1, max_norm / (n + 1e-6))
      m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
      p = p (1 - lr wd) - lr (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps)
    with weight decay only on parameters of rank 2 or more (not on norms or
    biases), and writes p, m and v back with `weft.assign`. The moments are
    `weft.param ... state` tensors named `<param>.exp_avg` and
    `<param>.exp_avg_sq`, initialised to zeros. `max-grad-norm=0` disables
    clipping.

    The update is of whole tensors: where the optimizer state and the
    update are split (ZeRO-1/2) is `weft-partition-optimizer`'s, which finds
    each gradient by the `weft.grad_of` this pass puts on the op making it.
    A parameter already split (`weft.shard_of`: tensor parallel, ZeRO-3)
    has a split gradient, whose squares are summed locally and all-reduced
    over its axes for the norm.

    With `layer-grad-norms`, each layer's gradient norm (its parameters'
    gradients after unscaling, before clipping; layers are weft.layer's)
    is written into the health probe `<layer>/grad_norm` (a transient
    state parameter, see weft-probes), the partial sums of split
    gradients all-reduced as one vector per set of axes.

    Without `keep-func` the gradient function is erased once the step is
    built (it was a stage on the way to the step).
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "Gradient function to extend">,
    Option<"out", "out", "std::string", /*default=*/"\"step\"",
           "Name of the step function to create">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.95", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.1",
           "Decoupled weight decay for matrices">,
    Option<"maxGradNorm", "max-grad-norm", "double", /*default=*/"1.0",
           "Global gradient-norm clip (0 disables)">,
    Option<"keepFunc", "keep-func", "bool", /*default=*/"true",
           "Keep the gradient function beside the step">,
    Option<"layerGradNorms", "layer-grad-norms", "bool", /*default=*/"false",
           "Write each layer's gradient norm into a health probe">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

#endif // WEFT_PASSES_OPTIMIZER_TD

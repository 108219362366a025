//===- Passes.td - reverse-mode automatic differentiation --*- tablegen -*-===//

#ifndef WEFT_PASSES_AUTODIFF_TD
#define WEFT_PASSES_AUTODIFF_TD

include "mlir/Pass/PassBase.td"

def Autodiff : Pass<"weft-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the gradient function of a forward graph";
  let description = [{
    Takes the function `func` whose first result is the 0-d f32 loss and adds
    a function `out` that computes the loss and its gradient with respect to
    every `weft.param` not marked `state`, by reverse-mode differentiation:

    ```mlir
    func.func @train_step(%tokens, %labels) -> (tensor<f32> {weft.output = "loss"},
        tensor<256x64xf32> {weft.grad = "transformer.wte.weight"}, ...)
    ```

    The forward ops are copied in order; then, walking them backwards, each
    op that lies on a path from a parameter to the loss builds its operands'
    gradients through `GradientOpInterface`, and gradients of values used
    more than once are summed. Results are the loss followed by one gradient
    per parameter, in the order the parameters are declared, each tagged with
    `weft.grad` = the parameter's name (a parameter the loss does not depend
    on gets zeros). Forward results other than the loss are dropped, and dead
    ops are erased. An active op without a gradient rule is an error.

    With `loss-scale` S > 0 (dynamic loss scaling, for fp16), the function
    also declares the state parameter `loss_scale` (ones, with
    `weft.loss_scale` = S and `weft.loss_scale_window`), and the backward
    starts from S times it instead of 1: every gradient is scaled, the
    loss result is not. weft-optimizer-adamw unscales, skips overflowed
    steps and moves the scale.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "Function to differentiate (its first result is the loss)">,
    Option<"out", "out", "std::string", /*default=*/"\"train_step\"",
           "Name of the gradient function to create">,
    Option<"lossScale", "loss-scale", "double", /*default=*/"0",
           "Dynamic loss scaling's initial scale (0: none): the backward "
           "starts from the scale, held in state parameter loss_scale">,
    Option<"lossScaleWindow", "loss-scale-window", "int64_t",
           /*default=*/"2000",
           "Clean steps before the loss scale doubles">
  ];
  let dependentDialects = ["::weft::WeftDialect", "::mlir::func::FuncDialect"];
}

def EvalForward : Pass<"weft-eval-forward", "::mlir::ModuleOp"> {
  let summary = "Put the evaluation forward in evaluation mode: no dropout";
  let description = [{
    After weft-autodiff has made the gradient function from `func`, `func`
    is what evaluation and sampling run: every `weft.dropout` in it becomes
    its input and every `weft.attention` drops nothing (PyTorch's
    model.eval()), and a `dropout_step` parameter left unread goes too. The
    training functions keep their dropout.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "The evaluation function">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_AUTODIFF_TD

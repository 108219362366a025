//===- Passes.td - health probes ----------------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_HEALTH_TD
#define WEFT_PASSES_HEALTH_TD

include "mlir/Pass/PassBase.td"

def Probes : Pass<"weft-probes", "::mlir::ModuleOp"> {
  let summary = "Measure each layer's activations, attention and routing";
  let description = [{
    Adds to the forward `func` (before partitioning and autodiff) the
    quantities that warn of divergence before the loss does, per layer,
    each written into a scalar or vector state parameter that the runtime
    logs after every step (the parameter's `weft.probe` is the metric's
    name, `weft.probe_fold` how the micro-batches of a step combine):

      - `activations`: the RMS and the largest magnitude of what leaves
        each layer (the residual stream the next layer reads):
        `<layer>/act_rms` (fold `rms`: the mean square accumulates, the
        runtime takes the root of its mean) and `<layer>/act_max_abs`
        (fold `max`).
      - `attention`: the mean entropy (nats) of each attention's
        probabilities over batch, heads and queries, `<layer>/attn_entropy`
        (fold `mean`), by `weft.attention_entropy` of the attention's own
        query, key and lse: the lowering computes it in that attention's
        pass (a running sum of p_t s_t beside the softmax's), so the
        probabilities are never stored or formed twice. Dropout is not
        applied to it.
      - `router`: each router's load, the fraction of the token choices
        each expert received, `<layer>/router_load` ([E], fold `mean`), and
        its imbalance, E times the largest load (1: balanced),
        `<layer>/router_imbalance` (the same sums, fold `max_over_mean`: the
        whole step's load, however many micro-batches).

    A probe parameter is state and transient (checkpoints skip it): the
    runtime zeroes it after logging. Layers are weft.layer's, named by
    their parameters ("transformer.h.3"). weft-autodiff lets the forward
    assign probe parameters only; weft-eval-forward drops the probes from
    the evaluation program. The per-layer gradient norms are
    weft-optimizer-adamw's `layer-grad-norms`.

    ```mlir
    %p = weft.param "probe.transformer.h.0.act_rms" init(zeros) state
        {weft.probe = "transformer.h.0/act_rms", weft.probe_fold = "rms",
         weft.transient} : tensor<f32>
    weft.assign "probe.transformer.h.0.act_rms", %sum : tensor<f32>
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"forward\"",
           "The forward function (its first result is the loss)">,
    Option<"probes", "probes", "std::string", /*default=*/"\"\"",
           "Comma-separated: activations, attention, router (gradients "
           "is accepted and left to weft-optimizer-adamw)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_HEALTH_TD

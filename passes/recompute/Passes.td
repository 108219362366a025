//===- Passes.td - activation recomputation ----------------*- tablegen -*-===//

#ifndef WEFT_PASSES_RECOMPUTE_TD
#define WEFT_PASSES_RECOMPUTE_TD

include "mlir/Pass/PassBase.td"

def Recompute : Pass<"weft-recompute", "::mlir::func::FuncOp"> {
  let summary = "Recompute forward activations in the backward instead of keeping them";
  let description = [{
    Runs on a training step after autodiff, where the backward ops follow
    the forward and read the forward values they need directly. Some of
    those values are instead computed again just before their first
    backward reader, from values that stay (a layer's input, a parameter, a
    collective's result), so the forward's copy dies at its last forward
    use and the memory plan can reuse it.

    The forward is what the loss (the first result) needs. Layers are the
    `weft.layer` of the parameters an op reads, carried forward along the
    data flow; ops before the first layer (embeddings) and after the last
    (final norm, head, loss) are never recomputed, nor is a value a later
    layer reads (the layer's output, kept as the next one's input).

    `policy` is one policy for every layer or one per layer, in order, with
    runs (`full*2,selective*30`; the count must be the step's layers):
      - `none`: nothing changes.
      - `full` (Chen et al.): keep each layer's input and recompute
        everything else of the layer the backward reads.
      - `selective` (Korthikanti et al.'s choice): keep the outputs of
        GEMMs (matmul, grouped_matmul) and attention, recompute the cheap
        and memory-heavy ops between them (norms, activations, residual
        adds, dropout, routing's dispatch and combine).
      - `tensors:i+j` (a layer's entry only): recompute the layer's
        candidates i and j and keep the rest. A layer's candidates are,
        in program order, the values `full` recomputes; a kept one stays
        for the backward and for the clones that read it. So `full` is
        every candidate, `selective` every one but the GEMM and attention
        outputs, `none` none. `weftc compile --recompute budget=` chooses
        such sets on small steps.

    With `regather` (weft-train sets it under `sp=on`), an all-gather of
    a layer's activation that the backward reads (the gathered norm
    output a column-parallel GEMM's weight gradient needs) is gathered
    again before that reader whatever the policy, so the layer keeps its
    sequence shard, not t times as much: Megatron-LM's sequence
    parallelism, one all-gather more per such GEMM.

    Never recomputed otherwise: a collective or point-to-point transfer, the expert
    route (it all-gathers counts under expert parallelism), parameters and
    constants. A recomputed dropout draws the same mask (its seed is an
    attribute: the counter-based generator makes that free). The function
    gets `weft.activation_bytes`: per layer, the bytes of forward values the
    backward (or a recomputation) reads, after the rewrite. It also gets
    the same values under Korthikanti et al.'s accounting, which the
    memory estimator's tests compare with their formulas:
    `weft.korthikanti_bytes` (2 bytes an element whatever the type, no
    log-sum-exp, a 1-byte mask per dropout) and, apart,
    `weft.korthikanti_core_bytes` (the attention core Megatron keeps and
    FlashAttention does not: per score the softmax output, 2 bytes, and
    with attention dropout its mask and output, 3 more).

    ```mlir
    // policy=full: a layer's norm, recomputed before its gradient.
    %n = weft.rms_norm %x, %w ...          // forward
    ...
    %n_1 = weft.rms_norm %x, %w ...        // recomputed
    %g = weft.matmul %n_1, %dy ...         // backward reads the copy
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "What to recompute: none, full or selective for every layer, or "
           "one per layer with runs (full*2,selective*30), where a layer "
           "may name its candidates (tensors:0+3)">,
    Option<"regather", "regather", "bool", /*default=*/"false",
           "Gather a layer's all-gathered activations (sequence "
           "parallelism's) again in the backward instead of keeping them, "
           "with every policy">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_RECOMPUTE_TD

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

    Never recomputed: a collective or point-to-point transfer, the expert
    route (it all-gathers counts under expert parallelism), parameters and
    constants. A recomputed dropout draws the same mask (its seed is an
    attribute: the counter-based generator makes that free). The function
    gets `weft.activation_bytes`: per layer, the bytes of forward values the
    backward (or a recomputation) reads, after the rewrite.

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
           "one per layer with runs (full*2,selective*30)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_RECOMPUTE_TD

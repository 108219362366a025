// RUN: weft-opt %s --verify-diagnostics --pass-pipeline='builtin.module(weft-probes{probes=all})' -o /dev/null

// Without layers there is nothing to probe.
// expected-error @+1 {{weft-probes: @forward has no layers to probe (no weft.param with weft.layer is read on the way to the loss)}}
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<8x32xf32>
  %logits = weft.matmul %x, %head : tensor<4x8xf32>, tensor<8x32xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<4x32xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

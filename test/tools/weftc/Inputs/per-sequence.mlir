// Two layers whose stream is then scaled by a table of one row per
// sequence that no input feeds: the model cannot be written at another
// micro-batch (weft-rebatch says which op), so the planner refuses it.
func.func @forward(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> (tensor<f32> {weft.output = "loss"}) {
  %wte = weft.param "wte" init(normal, 2.0e-02) : tensor<16x2xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x2xf32>, tensor<2x4xi32>
  %w0 = weft.param "w0" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<2x2xf32>
  %a0 = weft.matmul %h, %w0 : tensor<2x4x2xf32>, tensor<2x2xf32>
  %h0 = weft.add %h, %a0 : tensor<2x4x2xf32>
  %w1 = weft.param "w1" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<2x2xf32>
  %a1 = weft.matmul %h0, %w1 : tensor<2x4x2xf32>, tensor<2x2xf32>
  %h1 = weft.add %h0, %a1 : tensor<2x4x2xf32>
  %scale = weft.constant dense<[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]]> : tensor<2x4x2xf32>
  %y = weft.mul %h1, %scale : tensor<2x4x2xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<2x16xf32>
  %logits = weft.matmul %y, %head : tensor<2x4x2xf32>, tensor<2x16xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32>
  return %loss : tensor<f32>
}

func.func @forward(%t: tensor<1x4xi32> {weft.input = "tokens"}, %l: tensor<1x4xi32> {weft.input = "labels"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.02) : tensor<16x8xf32>
  %h = weft.embedding %w, %t : tensor<16x8xf32>, tensor<1x4xi32>
  %x = weft.matmul %h, %w transpose_rhs : tensor<1x4x8xf32>, tensor<16x8xf32>
  %loss = weft.cross_entropy %x, %l : tensor<1x4x16xf32>, tensor<1x4xi32>
  return %loss : tensor<f32>
}

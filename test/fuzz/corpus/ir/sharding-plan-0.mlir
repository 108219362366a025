// A plan declares its mesh and splits the batch of @forward's inputs.

// Data parallelism: local batch 2; each parameter enters through one
// copy_to_group (used twice, still one); the loss is averaged over dp.
// PART: func.func @forward(%arg0: tensor<2x4xi32>
// PART: %[[E:.*]] = weft.copy_to_group %{{.*}} over @mesh ["dp"] : tensor<16x8xf32>
// PART-NOT: weft.copy_to_group
// PART: weft.embedding %[[E]], %arg0 : tensor<16x8xf32>, tensor<2x4xi32>
// PART: weft.matmul %{{.*}}, %[[E]] transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32>
// PART: %[[L:.*]] = weft.cross_entropy
// PART: weft.all_reduce mean %[[L]] over @mesh ["dp"] : tensor<f32>

// One rank: nothing to place.
// ONE-NOT: weft.mesh
// ONE-NOT: weft.sharding

func.func @forward(%tokens: tensor<8x4xi32> {weft.input = "tokens"},
                   %labels: tensor<8x4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %wte = weft.param "wte" init(normal, 0.02) : tensor<16x8xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x8xf32>, tensor<8x4xi32>
  %logits = weft.matmul %h, %wte transpose_rhs : tensor<8x4x8xf32>, tensor<16x8xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<8x4x16xf32>, tensor<8x4xi32>
  return %loss : tensor<f32>
}

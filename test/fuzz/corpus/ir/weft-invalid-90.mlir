// A zero-size dimension, or a shape whose bytes overflow, is refused where it
// is written (before sharding rules or gradients compute with it).
func.func @empty(%a: tensor<4x0xf32>, %b: tensor<0x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.matmul %a, %b : tensor<4x0xf32>, tensor<0x8xf32>
  return %0 : tensor<4x8xf32>
}

// Meshes and shardings parse, verify and print back.

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

func.func @megatron_mlp(%x: tensor<8x16x64xf32> {weft.sharding = #weft.sharding<@mesh, [["dp"], [], []]>}) -> tensor<8x16x256xf32> {
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [[], ["tp"]]>]} : tensor<64x256xf32>
  // A dimension may split over two axes, major first.
  %y = weft.matmul %x, %w {weft.sharding = [#weft.sharding<@mesh, [["dp", "tp"], [], []]>]} : tensor<8x16x64xf32>, tensor<64x256xf32>
  return %y : tensor<8x16x256xf32>
}

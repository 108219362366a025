// Collective ops round-trip, and autodiff applies Megatron's conjugate pairs.

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

// GRAD-LABEL: func.func @train_step
func.func @forward(%x: tensor<8x64xf32>) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.02) : tensor<64x16xf32>
  %wd = weft.copy_to_group %w over @mesh ["dp"] : tensor<64x16xf32>
  %full = weft.all_gather %wd over @mesh ["tp"] dim 1 : tensor<64x16xf32> -> tensor<64x64xf32>
  %y = weft.matmul %x, %full : tensor<8x64xf32>, tensor<64x64xf32>
  %rs = weft.reduce_scatter %y over @mesh ["tp"] dim 0 : tensor<8x64xf32> -> tensor<2x64xf32>
  %a2a = weft.all_to_all %rs over @mesh ["tp"] split 1 concat 0 : tensor<2x64xf32> -> tensor<8x16xf32>
  %mine = weft.shard_slice %a2a over @mesh ["dp"] dim 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  %s = weft.reduce_sum %a2a dims [0, 1] : tensor<8x16xf32>
  %m:2 = weft.all_reduce mean %s, %s over @mesh ["dp", "tp"] : tensor<f32>, tensor<f32>
  // GRAD: weft.all_reduce mean
  // The mean's gradient scales by 1/8 (the group is dp x tp).
  // GRAD: %[[S:.*]] = weft.constant dense<1.250000e-01> : tensor<f32>
  // GRAD: weft.mul %{{.*}}, %[[S]]
  // GRAD: weft.all_to_all %{{.*}} over @mesh ["tp"] split 0 concat 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  // GRAD: weft.all_gather %{{.*}} over @mesh ["tp"] dim 0 : tensor<2x64xf32> -> tensor<8x64xf32>
  // GRAD: weft.reduce_scatter %{{.*}} over @mesh ["tp"] dim 1 : tensor<64x64xf32> -> tensor<64x16xf32>
  // GRAD: weft.all_reduce sum %{{.*}} over @mesh ["dp"] : tensor<64x16xf32>
  return %m#0 : tensor<f32>
}

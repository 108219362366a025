// RUN: weft-opt %s -weft-sharding-propagate | FileCheck %s --check-prefix=PROP
// RUN: weft-opt %s -weft-sharding-propagate -weft-partition | FileCheck %s --check-prefix=PART
// RUN: weft-opt %s -weft-sharding-propagate -weft-partition -weft-autodiff | FileCheck %s --check-prefix=GRAD

// A Megatron MLP annotated by hand: W1 split by columns over tp, W2 by rows,
// the batch over dp. Propagation and partitioning find what Megatron-LM
// writes: a copy into the tp region before the column-parallel matmul, one
// all-reduce after the row-parallel one, and nothing else in the forward.

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]

func.func @forward(%x: tensor<8x16x64xf32> {weft.input = "x", weft.sharding = #weft.sharding<@mesh, [["dp"], [], []]>},
                   %y: tensor<8x16xi32> {weft.input = "labels", weft.sharding = #weft.sharding<@mesh, [["dp"], []]>})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w1 = weft.param "w1" init(normal, 0.02) {weft.sharding = [#weft.sharding<@mesh, [[], ["tp"]]>]} : tensor<64x256xf32>
  %b1 = weft.param "b1" init(zeros) : tensor<256xf32>
  %w2 = weft.param "w2" init(normal, 0.02) {weft.sharding = [#weft.sharding<@mesh, [["tp"], []]>]} : tensor<256x64xf32>
  %h = weft.matmul %x, %w1 : tensor<8x16x64xf32>, tensor<64x256xf32>
  %bb = weft.broadcast %b1 dims [2] : tensor<256xf32> -> tensor<8x16x256xf32>
  %hb = weft.add %h, %bb : tensor<8x16x256xf32>
  %a = weft.gelu %hb : tensor<8x16x256xf32>
  %o = weft.matmul %a, %w2 : tensor<8x16x256xf32>, tensor<256x64xf32>
  %r = weft.add %o, %x : tensor<8x16x64xf32>
  %loss = weft.cross_entropy %r, %y : tensor<8x16x64xf32>, tensor<8x16xi32>
  return %loss : tensor<f32>
}

// The bias follows the column split of the matmul it is added to.
// PROP: weft.param "b1" {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[}}["tp"]]>]
// PROP: weft.matmul {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[}}["dp"], [], ["tp"]]>]
// PROP: weft.gelu {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[}}["dp"], [], ["tp"]]>]
// The row-parallel output is whole in its features (its k factor is split).
// PROP: weft.matmul {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[}}["dp"], [], []]>]

// PART-LABEL: func.func @forward
// PART-SAME: tensor<4x16x64xf32> {{{.*}}weft.shard_of = #weft.sharding<@mesh, {{\[}}["dp"], [], []]>}
// PART: weft.param "w1" {{.*}}: tensor<64x64xf32>
// PART: weft.param "b1" {{.*}}: tensor<64xf32>
// PART: weft.param "w2" {{.*}}: tensor<64x64xf32>
// PART: %[[X:.*]] = weft.copy_to_group %arg0 over @mesh ["tp"] : tensor<4x16x64xf32>
// PART: weft.matmul %[[X]], {{.*}} : tensor<4x16x64xf32>, tensor<64x64xf32>
// PART: weft.gelu {{.*}} : tensor<4x16x64xf32>
// PART: %[[P:.*]] = weft.matmul {{.*}} : tensor<4x16x64xf32>, tensor<64x64xf32>
// PART-NEXT: %[[S:.*]] = weft.all_reduce sum %[[P]] over @mesh ["tp"] : tensor<4x16x64xf32>
// PART-NEXT: weft.add %[[S]], %arg0
// PART: %[[L:.*]] = weft.cross_entropy
// PART-NEXT: weft.all_reduce mean %[[L]] over @mesh ["dp"] : tensor<f32>
// Exactly one collective per matmul pair in the forward, plus the loss.
// PART-NOT: weft.all_reduce
// PART-NOT: weft.all_gather

// The backward mirrors it: the copy's gradient is the all-reduce of the
// input gradient over tp; replicated-over-dp parameters are all-reduced
// over dp.
// GRAD-LABEL: func.func @train_step
// GRAD-DAG: weft.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<4x16x64xf32>
// GRAD-DAG: weft.all_reduce sum %{{.*}} over @mesh ["dp"] : tensor<64x64xf32>

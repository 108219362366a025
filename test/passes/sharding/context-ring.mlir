// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 | FileCheck %s --check-prefix=PLAN
// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 -weft-sharding-propagate -weft-partition | FileCheck %s --check-prefix=PART
// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 -weft-sharding-propagate -weft-partition | FileCheck %s --check-prefix=COUNT
// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 -weft-sharding-propagate -weft-partition | FileCheck %s --check-prefix=BLOCKS
// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 -weft-sharding-propagate -weft-partition -weft-autodiff | weft-opt -pass-pipeline='builtin.module(func.func(weft-split-ring-shifts))' | FileCheck %s --check-prefix=SPLIT

// Context parallelism over cp=4 on a one-layer causal attention.

// The plan holds the sequence of 8 as 8 chunks of one, rank i holding
// chunks i and 7 - i: the positions become data in that order, rope and
// attention read them, and the token inputs say how they are cut.
// PLAN: weft.mesh @mesh axes ["cp"] sizes [4]
// PLAN: %arg0: tensor<2x8xi32> {weft.input = "tokens", weft.sequence_chunks = 8 : i64, weft.sharding = #weft.sharding<@mesh, {{\[}}[], ["cp"]]>}
// PLAN: %[[P:.*]] = weft.constant dense<[0, 7, 1, 6, 2, 5, 3, 4]> : tensor<8xi32> {weft.positions}
// PLAN: weft.rope %{{.*}} positions %[[P]]
// PLAN: weft.attention %{{.*}} positions(%[[P]], %[[P]]) scale = 5.000000e-01 causal

// Each rank keeps its 2 queries and attends to its own block, then to the
// 3 others as they come round the ring: per step one shift each of the
// key block, the value block and their positions, issued before the
// current block's attention so it overlaps it.
// PART-LABEL: func.func @forward
// PART: %[[MINE:.*]] = weft.shard_slice %{{.*}} over @mesh ["cp"] dim 0 : tensor<8xi32> -> tensor<2xi32>
// PART: %[[Q:.*]] = weft.rope %{{.*}} positions %[[MINE]] : tensor<2x2x2x4xf32>, tensor<2xi32>
// PART: %[[K1:.*]] = weft.ring_shift %[[Q]] over @mesh "cp" offset 1 : tensor<2x2x2x4xf32>
// PART: %[[V1:.*]] = weft.ring_shift %{{.*}} over @mesh "cp" offset 1 : tensor<2x2x2x4xf32>
// PART: %[[P1:.*]] = weft.ring_shift %[[MINE]] over @mesh "cp" offset 1 : tensor<2xi32>
// PART: %[[O0:.*]], %[[L0:.*]] = weft.attention %[[Q]], %[[Q]], %{{.*}} positions(%[[MINE]], %[[MINE]])
// PART: weft.ring_shift %[[K1]]
// PART: %[[O1:.*]], %[[L1:.*]] = weft.attention %[[Q]], %[[K1]], %[[V1]] positions(%[[MINE]], %[[P1]])
// The blocks merge by their log-sum-exp.
// PART: %[[M:.*]] = weft.max %[[L0]], %[[L1]]
// PART: weft.exp
// PART: weft.mul %[[O0]]
// PART: weft.mul %[[O1]]
// The mean loss of each rank's tokens, averaged over cp.
// PART: %[[LOSS:.*]] = weft.cross_entropy %{{.*}} : tensor<2x2x16xf32>, tensor<2x2xi32>
// PART: weft.all_reduce mean %[[LOSS]] over @mesh ["cp"] : tensor<f32>

// N - 1 = 3 steps: 3 shifts of each of the 3 and 4 block attentions.
// COUNT-COUNT-9: weft.ring_shift
// COUNT-NOT: weft.ring_shift
// BLOCKS-COUNT-4: weft.attention {{.*}} causal
// BLOCKS-NOT: weft.attention

// After autodiff each shift is a send where it stood and a receive before
// its first reader. The forward: 9 pairs with offset 1; the backward sends
// the key and value gradients back (offset -1) over the 3 steps: 6 pairs.
// SPLIT-LABEL: func.func @train_step
// SPLIT: weft.send %[[QS:.*]] to @mesh "cp" offset 1 tag 1048576
// SPLIT: weft.send %{{.*}} to @mesh "cp" offset 1 tag 1048577
// SPLIT: weft.send %{{.*}} to @mesh "cp" offset 1 tag 1048578
// SPLIT: weft.attention %[[QS]], %[[QS]]
// SPLIT: %[[R:.*]] = weft.recv from @mesh "cp" offset -1 tag 1048576
// SPLIT: weft.send %[[R]] to @mesh "cp" offset 1 tag 1048579
// SPLIT-COUNT-6: weft.recv from @mesh "cp" offset -1
// SPLIT-NOT: offset 1 tag
// SPLIT: weft.attention_grad
// SPLIT-COUNT-6: weft.send {{.*}} offset -1
// SPLIT-NOT: weft.send
// SPLIT-NOT: weft.ring_shift

func.func @forward(%tokens: tensor<2x8xi32> {weft.input = "tokens"},
                   %labels: tensor<2x8xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %wte = weft.param "wte" init(normal, 0.02) : tensor<16x8xf32>
  %h = weft.embedding %wte, %tokens : tensor<16x8xf32>, tensor<2x8xi32>
  %x = weft.reshape %h : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
  %q = weft.rope %x : tensor<2x8x2x4xf32>
  %a:2 = weft.attention %q, %q, %x scale = 0.5 causal : tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>
  %o = weft.reshape %a#0 : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
  %logits = weft.matmul %o, %wte transpose_rhs : tensor<2x8x8xf32>, tensor<16x8xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<2x8x16xf32>, tensor<2x8xi32>
  return %loss : tensor<f32>
}

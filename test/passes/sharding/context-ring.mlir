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
// The blocks merge by their log-sum-exp (each floored at -1e30 first: a
// query that sees none of a block weighs nothing there).
// PART: %[[F1:.*]] = weft.max %[[L1]], %{{.*}}
// PART: %[[M:.*]] = weft.max %{{.*}}, %[[F1]]
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

// After autodiff each shift is a send as soon as its value exists and a
// receive before its first reader. The forward passes each step's blocks on
// while it attends to them.
// SPLIT-LABEL: func.func @train_step
// SPLIT-DAG: weft.send %[[QS:.*]] to @mesh "cp" offset 1 tag 1048576
// SPLIT-DAG: weft.send %{{.*}} to @mesh "cp" offset 1 tag 1048577
// SPLIT-DAG: weft.send %{{.*}} to @mesh "cp" offset 1 tag 1048578
// SPLIT: weft.attention %[[QS]], %[[QS]]
// SPLIT: %[[R:.*]] = weft.recv from @mesh "cp" offset -1 tag 1048576
// SPLIT-NEXT: weft.send %[[R]] to @mesh "cp" offset 1 tag 1048579
// The backward sends a block's key and value gradients back (offset -1)
// before the next block's gradient, which the transfer overlaps; the
// received sum joins that block's gradient and moves on.
// SPLIT: %{{.*}}, %[[DK:.*]], %[[DV:.*]] = weft.attention_grad
// SPLIT-NEXT: weft.send %[[DV]] to @mesh "cp" offset -1 tag 1048585
// SPLIT-NEXT: weft.send %[[DK]] to @mesh "cp" offset -1 tag 1048586
// SPLIT-NOT: weft.recv
// SPLIT: %{{.*}}, %[[DK2:.*]], %[[DV2:.*]] = weft.attention_grad
// SPLIT: %[[IN:.*]] = weft.recv from @mesh "cp" offset 1 tag 1048585
// SPLIT-NEXT: %[[SUM:.*]] = weft.add %[[DV2]], %[[IN]]
// SPLIT-NEXT: weft.send %[[SUM]] to @mesh "cp" offset -1 tag 1048587
// SPLIT-NOT: weft.ring_shift

// In all (the kept @forward's ring too): 9 + 9 forward pairs, and the 6
// backward pairs of the key and value gradients over the 3 steps.
// RUN: weft-opt %s -weft-apply-plan=plan=cp=4 -weft-sharding-propagate -weft-partition -weft-autodiff | weft-opt -pass-pipeline='builtin.module(func.func(weft-split-ring-shifts))' > %t
// RUN: grep -c 'weft.send .* offset 1 tag' %t | FileCheck %s --check-prefix=EIGHTEEN
// RUN: grep -c 'weft.recv .* offset -1 tag' %t | FileCheck %s --check-prefix=EIGHTEEN
// RUN: grep -c 'weft.send .* offset -1 tag' %t | FileCheck %s --check-prefix=SIX
// RUN: grep -c 'weft.recv .* offset 1 tag' %t | FileCheck %s --check-prefix=SIX
// EIGHTEEN: 18
// SIX: {{^}}6

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

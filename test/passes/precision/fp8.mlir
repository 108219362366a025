// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=blockwise})' | FileCheck %s --check-prefix=BLOCK
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise keep=head,first})' | FileCheck %s --check-prefix=TENSOR
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none})' | FileCheck %s --check-prefix=ROW
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=mxfp8 min-dim=256})' | FileCheck %s --check-prefix=MX
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=blockwise},weft-autodiff)' | FileCheck %s --check-prefix=GRAD
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,tp=2 fp8=tensorwise fuse-and-plan=false keep-gradients=true})' | FileCheck %s --check-prefix=PLACED
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=none})' | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise-delayed history=4 margin=1})' | FileCheck %s --check-prefix=DELAYED
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed fuse-and-plan=false})' | FileCheck %s --check-prefix=RECORD
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed fp8-history=4 fp8-margin=1 fuse-and-plan=false})' | FileCheck %s --check-prefix=DELAYED
// weft-train checks the FP8 options as it builds the pipeline, naming its
// own (there is no IR yet to place the error on, so it is text).
// RUN: not weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed fp8-history=0})' 2>&1 | FileCheck %s --check-prefix=TRAINHIST
// TRAINHIST: weft-train: fp8-history: must be in [1, 2^20] steps, not 0
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed plan=microbatches=2 fuse-and-plan=false})' | FileCheck %s --check-prefix=MICRO
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed plan=dp=2,microbatches=2 fuse-and-plan=false})' | FileCheck %s --check-prefix=MICRODP
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=tensorwise-delayed plan=pp=2,microbatches=2 fuse-and-plan=false})' | FileCheck %s --check-prefix=PP
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3 fp8=tensorwise-delayed fuse-and-plan=false})' | FileCheck %s --check-prefix=ZERO
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3 fp8=blockwise fuse-and-plan=false})' | FileCheck %s --check-prefix=ZBLOCK
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise,tensorwise keep=none})' | FileCheck %s --check-prefix=MIXED
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{fp8=none,tensorwise-delayed fuse-and-plan=false})' | FileCheck %s --check-prefix=MIXRECORD

// Two layers of norm -> up [128, 256] -> silu -> down [256, 128] ->
// residual, then a head [128, 64] and the loss, over 8 tokens.
func.func @forward(%x: tensor<8x128xf32> {weft.input = "x"},
                   %labels: tensor<8xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<128xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<128x256xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<256x128xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<8x128xf32>, tensor<128xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<8x128xf32>, tensor<128x256xf32>
  %a0 = weft.silu %h0 : tensor<8x256xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<8x256xf32>, tensor<256x128xf32>
  %r0 = weft.add %x, %d0 : tensor<8x128xf32>
  %n1w = weft.param "l1.norm" init(ones) {weft.layer = 1 : i64} : tensor<128xf32>
  %up1 = weft.param "l1.up" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<128x256xf32>
  %dn1 = weft.param "l1.down" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<256x128xf32>
  %n1 = weft.rms_norm %r0, %n1w {epsilon = 1.0e-05 : f64} : tensor<8x128xf32>, tensor<128xf32>
  %h1 = weft.matmul %n1, %up1 : tensor<8x128xf32>, tensor<128x256xf32>
  %a1 = weft.silu %h1 : tensor<8x256xf32>
  %d1 = weft.matmul %a1, %dn1 : tensor<8x256xf32>, tensor<256x128xf32>
  %r1 = weft.add %r0, %d1 : tensor<8x128xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<128x64xf32>
  %logits = weft.matmul %r1, %head : tensor<8x128xf32>, tensor<128x64xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<8x64xf32>, tensor<8xi32>
  return %loss : tensor<f32>
}

// Blockwise (DeepSeek-V3): 1x128 activation tiles, 128x128 weight blocks,
// E4M3 throughout; the output is marked so its gradient is tiled along n.
// The head stays (keep=head, the default). Bytes: per GEMM, x and the
// output gradient 8*128 + 8*256 elements with 8 + 16 scales, w 32768 with
// 2 scales: 35840 + 4 * 26 = 35944 FP8 bytes against 71680 in bf16; four
// GEMMs in all.
// BLOCK-LABEL: func.func @forward
// BLOCK-SAME: weft.fp8 = "blockwise"
// BLOCK-SAME: weft.fp8_bytes = array<i64: 143776, 286720>
// BLOCK-SAME: weft.fp8_gemms = 4 : i64
// BLOCK: %[[N0:.*]] = weft.rms_norm
// BLOCK: %[[XA:.*]] = weft.fp8_amax %[[N0]] : tensor<8x128xf32> -> tensor<8x1xf32>
// BLOCK: %[[XQ:.*]] = weft.fp8_quantize %[[N0]], %[[XA]] {format = f8E4M3FN} : tensor<8x128xf32>, tensor<8x1xf32>
// BLOCK: %[[WA:.*]] = weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x2xf32>
// BLOCK: %[[WQ:.*]] = weft.fp8_quantize %{{.*}}, %[[WA]] {format = f8E4M3FN}
// BLOCK: %[[H0:.*]] = weft.matmul %[[XQ]], %[[WQ]]
// BLOCK: %[[H0G:.*]] = weft.fp8_quantize_grad %[[H0]] {block = array<i64: 1, 128>, format = f8E4M3FN} : tensor<8x256xf32>
// BLOCK: weft.silu %[[H0G]]
// BLOCK: weft.fp8_amax %{{.*}} : tensor<8x256xf32> -> tensor<8x2xf32>
// BLOCK: weft.fp8_amax %{{.*}} : tensor<256x128xf32> -> tensor<2x1xf32>
// BLOCK: weft.param "head"
// BLOCK-NOT: weft.fp8_quantize
// BLOCK: weft.cross_entropy

// Tensorwise: one scale per tensor, E5M2 for the output gradient; the
// first layer stays too.
// TENSOR-LABEL: func.func @forward
// TENSOR-SAME: weft.fp8_gemms = 2 : i64
// TENSOR-NOT: weft.fp8_quantize
// TENSOR: weft.param "l1.norm"
// TENSOR: weft.fp8_amax %{{.*}} : tensor<8x128xf32> -> tensor<1x1xf32>
// TENSOR: weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x1xf32>
// TENSOR: weft.fp8_quantize_grad %{{.*}} {block = array<i64: 8, 256>, format = f8E5M2} : tensor<8x256xf32>

// Rowwise with keep=none: the head is FP8 too (64 is a multiple of 16),
// x by rows, w by columns; each with the blocks its backward GEMM
// re-quantizes it by (x by columns for the weight gradient, w by rows for
// the input gradient, the output gradient by columns for the weight's).
// ROW-LABEL: func.func @forward
// ROW-SAME: weft.fp8_gemms = 5 : i64
// ROW: weft.fp8_amax %{{.*}} : tensor<8x128xf32> -> tensor<8x1xf32>
// ROW: weft.fp8_quantize %{{.*}}, %{{.*}} {backward_block = array<i64: 8, 1>, format = f8E4M3FN} : tensor<8x128xf32>, tensor<8x1xf32>
// ROW: weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x256xf32>
// ROW: weft.fp8_quantize %{{.*}}, %{{.*}} {backward_block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<128x256xf32>, tensor<1x256xf32>
// ROW: weft.fp8_quantize_grad %{{.*}} {backward_block = array<i64: 8, 1>, block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<8x256xf32>
// ROW: weft.fp8_amax %{{.*}} : tensor<128x64xf32> -> tensor<1x64xf32>

// MXFP8 with min-dim=256: only GEMMs whose contraction and output are both
// 256 or more, which none of these are.
// MX-LABEL: func.func @forward
// MX-SAME: weft.fp8_gemms = 0 : i64
// MX-NOT: weft.fp8_quantize

// After autodiff the backward's GEMMs read the quantized operands and the
// quantized output gradient: the last layer's silu gradient goes through
// block maxima and an fp8_quantize tiled along n before the dgrad (lhs) and
// wgrad (rhs).
// GRAD-LABEL: func.func @train_step
// GRAD: weft.param "l1.down"
// GRAD: %[[XQ:.*]] = weft.fp8_quantize %{{.*}}, %{{.*}} {format = f8E4M3FN} : tensor<8x128xf32>, tensor<8x1xf32>
// GRAD: %[[WQ:.*]] = weft.fp8_quantize %{{.*}}, %{{.*}} {format = f8E4M3FN} : tensor<128x256xf32>, tensor<1x2xf32>
// GRAD: %[[G:.*]] = weft.silu_grad
// GRAD-NEXT: %[[GA:.*]] = weft.fp8_amax %[[G]] : tensor<8x256xf32> -> tensor<8x2xf32>
// GRAD-NEXT: %[[DY:.*]] = weft.fp8_quantize %[[G]], %[[GA]] {format = f8E4M3FN}
// GRAD-DAG: weft.matmul %[[DY]], %[[WQ]] transpose_rhs
// GRAD-DAG: weft.matmul %[[XQ]], %[[DY]] transpose_lhs

// Placed on dp=2 x tp=2 (the weights' tp splits are from the plan's rules:
// none here, so only the batch splits): a per-tensor maximum of a
// dp-split activation is its shard's maximum all-reduced by max over dp,
// and the matmul stays split; the output gradient's mark records dp.
// PLACED-LABEL: func.func @train_step
// PLACED: %[[A:.*]] = weft.fp8_amax %{{.*}} : tensor<4x128xf32> -> tensor<1x1xf32>
// PLACED-NEXT: %[[M:.*]] = weft.all_reduce max %[[A]] over @mesh ["dp"] : tensor<1x1xf32>
// PLACED: weft.fp8_quantize %{{.*}}, %{{.*}} {format = f8E4M3FN} : tensor<4x128xf32>, tensor<1x1xf32>
// PLACED: weft.matmul %{{.*}}, %{{.*}} : tensor<4x128xf32>, tensor<128x256xf32>
// PLACED: weft.fp8_quantize_grad %{{.*}} {block = array<i64: 4, 256>, format = f8E5M2, weft.amax_axes = ["dp"], weft.amax_mesh = @mesh} : tensor<4x256xf32>
// PLACED: weft.silu_grad
// PLACED-NEXT: weft.fp8_amax %{{.*}} : tensor<4x256xf32> -> tensor<1x1xf32>
// PLACED-NEXT: weft.all_reduce max %{{.*}} over @mesh ["dp"] : tensor<1x1xf32>

// NONE-NOT: weft.fp8

// A recipe per layer (the planner's per-pipeline-rank choice): layer 0
// row-wise, layer 1 per-tensor, and the head, not kept, the last layer's.
// MIXED-LABEL: func.func @forward
// MIXED-SAME: weft.fp8 = "rowwise,tensorwise"
// MIXED-SAME: weft.fp8_gemms = 5 : i64
// MIXED: weft.fp8_amax %{{.*}} : tensor<8x128xf32> -> tensor<8x1xf32>
// MIXED: weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x256xf32>
// MIXED: weft.fp8_quantize_grad %{{.*}} {backward_block = array<i64: 8, 1>, block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<8x256xf32>
// MIXED: weft.param "l1.norm"
// MIXED: weft.fp8_amax %{{.*}} : tensor<8x128xf32> -> tensor<1x1xf32>
// MIXED: weft.fp8_amax %{{.*}} : tensor<128x256xf32> -> tensor<1x1xf32>
// MIXED: weft.fp8_quantize_grad %{{.*}} {block = array<i64: 8, 256>, format = f8E5M2} : tensor<8x256xf32>
// MIXED: weft.param "head"
// MIXED: weft.fp8_amax %{{.*}} : tensor<128x64xf32> -> tensor<1x1xf32>

// Delayed scaling in one layer only: its histories are recorded (the step
// pushes them), and the other layer has none.
// MIXRECORD-LABEL: func.func @step
// MIXRECORD-NOT: "l0.{{.*}}amax_history"
// MIXRECORD: weft.param "l1.down.fp8.grad_amax_history"
// MIXRECORD-NOT: "l0.{{.*}}amax_history"
// MIXRECORD: weft.concat %{{.*}}, %{{.*}} dim 0 : tensor<1xf32>, tensor<15xf32>
// Under micro-batches each micro-batch's maximum folds into the step's
// (a state parameter @accumulate keeps), which the step pushes once and
// resets: one maximum a step, the whole batch's.
// MICRO-LABEL: func.func @accumulate
// MICRO: %[[SM:.*]] = weft.param "l1.down.fp8.grad_amax_history.step_max" init(zeros) state {weft.transient} : tensor<f32>
// MICRO: %[[A:.*]] = weft.fp8_amax %{{.*}} {weft.amax_history = "l1.down.fp8.grad_amax_history"} : tensor<8x128xf32> -> tensor<1x1xf32>
// MICRO: %[[AS:.*]] = weft.reshape %[[A]] : tensor<1x1xf32> -> tensor<f32>
// MICRO-NEXT: %[[M:.*]] = weft.max %[[SM]], %[[AS]] : tensor<f32>
// MICRO-NEXT: weft.assign "l1.down.fp8.grad_amax_history.step_max", %[[M]] : tensor<f32>
// MICRO-NOT: weft.assign "l1.down.fp8.grad_amax_history",
// MICRO-LABEL: func.func @step
// MICRO-NOT: weft.fp8_amax
// MICRO: %[[SEEN:.*]] = weft.param "l1.down.fp8.grad_amax_history.step_max" init(zeros) state {weft.transient} : tensor<f32>
// MICRO: %[[H:.*]] = weft.param "l1.down.fp8.grad_amax_history" init(zeros) state {{.*}}: tensor<16xf32>
// MICRO: %[[OK:.*]] = weft.ge %{{.*}}, %[[SEEN]] : tensor<f32>
// MICRO: %[[ROLL:.*]] = weft.concat
// MICRO-NEXT: weft.assign "l1.down.fp8.grad_amax_history", %[[ROLL]] : tensor<16xf32>
// MICRO-NEXT: %[[NIL:.*]] = weft.constant dense<0.000000e+00> : tensor<f32>
// MICRO-NEXT: weft.assign "l1.down.fp8.grad_amax_history.step_max", %[[NIL]] : tensor<f32>
// Under pp a history lives on its weight's stage (its layer's): the stage's
// backward folds each micro-batch's maxima into the step's, and the rank's
// step pushes it.
// PP-LABEL: func.func @stage0.forward
// PP: weft.param "l0.up.fp8.input_amax_history" init(zeros) state {weft.layer = 0 : i64, weft.stage = 0 : i64}
// PP-LABEL: func.func @stage0.backward
// PP: weft.param "l0.up.fp8.input_amax_history.step_max" init(zeros) state {weft.stage = 0 : i64, weft.transient}
// PP: weft.assign "l0.up.fp8.input_amax_history.step_max"
// PP-LABEL: func.func @stage1.backward
// PP: weft.assign "l1.down.fp8.grad_amax_history.step_max"
// PP-LABEL: func.func @rank0.step
// PP: weft.assign "l0.up.fp8.input_amax_history", %{{.*}} : tensor<16xf32>
// PP-NOT: weft.assign "l1.
// PP-LABEL: func.func @rank1.step
// PP: weft.assign "l1.down.fp8.grad_amax_history", %{{.*}} : tensor<16xf32>
// ZeRO leaves the histories whole (a split one would roll per shard).
// ZERO-LABEL: func.func @step
// ZERO: weft.param "l1.down.fp8.grad_amax_history" init(zeros) state {{.*}}: tensor<16xf32>
// Each weight shard is quantized, then gathered (weft-fp8-gather), and
// the backward gathers the quantized shard again rather than keeping the
// whole FP8 weight from the forward (weft-reshard-after-forward).
// ZERO: %[[Q:.*]] = weft.fp8_quantize %{{.*}} : tensor<64x256xf32>, tensor<1x1xf32>
// ZERO-NEXT: %[[G:.*]] = weft.all_gather %[[Q]] over @mesh ["dp"] dim 0 : tensor<64x256xf32> -> tensor<128x256xf32>
// ZERO: weft.cross_entropy
// ZERO: weft.all_gather %[[Q]] over @mesh ["dp"] dim 0 : tensor<64x256xf32> -> tensor<128x256xf32>

// Delayed scaling (Transformer Engine's DelayedScaling): each quantized
// tensor has an amax history (a state parameter of `history` steps); its
// largest entry times 2^margin is the maximum this step quantizes by, the
// current maximum while the history is still zeros (the first step). The
// current maximum carries the history's name; so does the output's mark,
// for its gradient's.
// DELAYED-LABEL: func.func @forward
// DELAYED-DAG: %[[H:.*]] = weft.param "l0.up.fp8.input_amax_history" init(zeros) state {{.*}}: tensor<4xf32>
// DELAYED-DAG: weft.param "l0.up.fp8.grad_amax_history" init(zeros) state {{.*}}: tensor<4xf32>
// DELAYED: %[[N0:.*]] = weft.rms_norm
// DELAYED-NEXT: %[[CUR:.*]] = weft.fp8_amax %[[N0]] {weft.amax_history = "l0.up.fp8.input_amax_history"} : tensor<8x128xf32> -> tensor<1x1xf32>
// DELAYED-NEXT: %[[R:.*]] = weft.reduce_max %[[H]] dims [0]
// DELAYED-NEXT: %[[R2:.*]] = weft.reshape %[[R]]
// DELAYED-NEXT: %[[TWO:.*]] = weft.constant dense<2.000000e+00> : tensor<1x1xf32>
// DELAYED-NEXT: %[[M:.*]] = weft.mul %[[R2]], %[[TWO]] : tensor<1x1xf32>
// DELAYED: %[[FRESH:.*]] = weft.ge %{{.*}}, %[[M]] : tensor<1x1xf32>
// DELAYED-NEXT: %[[USED:.*]] = weft.select %[[FRESH]], %[[CUR]], %[[M]] : tensor<1x1xf32>
// DELAYED-NEXT: weft.fp8_quantize %[[N0]], %[[USED]] {format = f8E4M3FN}
// DELAYED: weft.fp8_quantize_grad %{{.*}} history %{{.*}} : tensor<1x1xf32> {block = array<i64: 8, 256>, format = f8E5M2, weft.amax_history = "l0.up.fp8.grad_amax_history"}

// The optimizer step pushes each maximum onto its history (the newest
// first, the oldest dropped), the gradient's too; the forward only reads.
// RECORD-LABEL: func.func @forward
// RECORD-NOT: weft.assign
// RECORD-LABEL: func.func @step
// RECORD: %[[GH:.*]] = weft.param "l1.down.fp8.grad_amax_history"
// RECORD: %[[G:.*]] = weft.fp8_amax %{{.*}} {weft.amax_history = "l1.down.fp8.grad_amax_history"} : tensor<8x128xf32> -> tensor<1x1xf32>
// RECORD: %[[S:.*]] = weft.reshape %[[G]] : tensor<1x1xf32> -> tensor<f32>
// A non-finite maximum (an overflowed step) is recorded as 0.
// RECORD: %[[OK:.*]] = weft.ge %{{.*}}, %[[S]] : tensor<f32>
// RECORD: %[[KEPT:.*]] = weft.select %[[OK]], %[[S]], %{{.*}} : tensor<f32>
// RECORD-NEXT: %[[NOW:.*]] = weft.reshape %[[KEPT]] : tensor<f32> -> tensor<1xf32>
// RECORD-NEXT: %[[OLD:.*]] = weft.slice %[[GH]] [0] to [15]
// RECORD-NEXT: %[[ROLL:.*]] = weft.concat %[[NOW]], %[[OLD]] dim 0 : tensor<1xf32>, tensor<15xf32>
// RECORD-NEXT: weft.assign "l1.down.fp8.grad_amax_history", %[[ROLL]] : tensor<16xf32>

// 128 x 128-blocked weights under ZeRO-3 are quantized a shard at a time
// too (weft-fp8-gather): l1.up's 64-row shards lie in one block along the
// rows, so their maxima are max all-reduced over dp; l1.down's 128-row
// shards hold whole blocks, so each rank's maxima are its own. The
// quantized shards are gathered, and the backward gathers them again.
// ZBLOCK-LABEL: func.func @step
// ZBLOCK: %[[P:.*]] = weft.param "l1.down"
// ZBLOCK: %[[UA:.*]] = weft.fp8_amax %{{.*}} : tensor<64x256xf32> -> tensor<1x2xf32>
// ZBLOCK-NEXT: weft.all_reduce max %[[UA]] over @mesh ["dp"] : tensor<1x2xf32>
// ZBLOCK: %[[A:.*]] = weft.fp8_amax %[[P]] : tensor<128x128xf32> -> tensor<1x1xf32>
// ZBLOCK-NEXT: %[[Q:.*]] = weft.fp8_quantize %[[P]], %[[A]] {format = f8E4M3FN} : tensor<128x128xf32>, tensor<1x1xf32>
// ZBLOCK-NEXT: weft.all_gather %[[Q]] over @mesh ["dp"] dim 0 : tensor<128x128xf32> -> tensor<256x128xf32>
// ZBLOCK: weft.cross_entropy
// ZBLOCK: %[[G2:.*]] = weft.all_gather %[[Q]] over @mesh ["dp"] dim 0 : tensor<128x128xf32> -> tensor<256x128xf32>
// ZBLOCK: weft.matmul %{{.*}}, %[[G2]] transpose_rhs

// Under dp the last micro-batch runs @accumulate_last (its gradients'
// all-reduce under its backward): its maxima fold into the step's too, so
// the history sees every micro-batch.
// MICRODP-LABEL: func.func @accumulate_last
// MICRODP: %[[SM:.*]] = weft.param "l1.down.fp8.grad_amax_history.step_max" init(zeros) state {weft.transient} : tensor<f32>
// MICRODP: %[[M:.*]] = weft.max %[[SM]], %{{.*}} : tensor<f32>
// MICRODP-NEXT: weft.assign "l1.down.fp8.grad_amax_history.step_max", %[[M]] : tensor<f32>
// MICRODP-LABEL: func.func @step

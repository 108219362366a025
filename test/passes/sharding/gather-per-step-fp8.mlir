// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise-delayed keep=none},weft-apply-plan{plan=dp=2,zero=3},func.func(weft-sharding-propagate,weft-partition,weft-fp8-gather{params=false}),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step,func.func(weft-fp8-gather{func=gather}),weft-fp8-record-amax{func=train_step})' | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3,mb=2 fp8=tensorwise fp8-keep=none target=cuda sched=true})' | FileCheck %s --check-prefix=SCHED
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none},weft-apply-plan{plan=dp=2,zero=3},func.func(weft-sharding-propagate,weft-partition,weft-fp8-gather{params=false}),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step,func.func(weft-fp8-gather{func=gather}))' | FileCheck %s --check-prefix=ROWS
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none},weft-apply-plan{plan=dp=2,zero=3},func.func(weft-sharding-propagate,weft-partition,weft-fp8-gather{params=false}),weft-autodiff,weft-accumulate-gradients{microbatches=2},weft-gather-per-step{fp8-codes=true},func.func(weft-fp8-gather{func=gather}))' | FileCheck %s --check-prefix=ROWCODES
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-train{plan=dp=2,zero=3,mb=2 fp8=rowwise fp8-keep=none target=cuda sched=true})' | FileCheck %s --check-prefix=SCHEDROWS

// ZeRO-3 gathered once a step, with FP8 weights. Delayed scaling reads
// each weight by one per-tensor quantization, forward and backward:
// @gather computes its scale from the history and the shard's maximum, max
// all-reduced over dp (which it folds into the history's step maximum, as
// @accumulate does its inputs'), quantizes the shard, gathers the
// quantized values and keeps them with their maximum; @accumulate
// quantizes that state again by that maximum (the same values) for its
// GEMMs and gathers nothing.
// CHECK-LABEL: func.func @gather()
// CHECK-DAG: %[[STEPMAX:.*]] = weft.param "w.fp8.weight_amax_history.step_max" init(zeros) state {weft.transient} : tensor<f32>
// CHECK-DAG: %[[W:.*]] = weft.param "w" init(normal, {{.*}}) {{.*}}: tensor<16x32xf32>
// CHECK-DAG: %[[H:.*]] = weft.param "w.fp8.weight_amax_history" init(zeros) state {{.*}} : tensor<16xf32>
// CHECK-DAG: weft.param "w.fp8.gathered" init(zeros) state {weft.transient} : tensor<32x32xf32>
// CHECK-DAG: weft.param "w.fp8.amax.gathered" init(zeros) state {weft.transient} : tensor<1x1xf32>
// CHECK-NOT: weft.param "w.gathered"
// CHECK: weft.reduce_max %[[H]]
// CHECK: %[[A0:.*]] = weft.fp8_amax %[[W]] {weft.amax_history = "w.fp8.weight_amax_history"} : tensor<16x32xf32> -> tensor<1x1xf32>
// CHECK-NEXT: %[[A:.*]] = weft.all_reduce max %[[A0]] over @mesh ["dp"] : tensor<1x1xf32>
// CHECK: %[[S:.*]] = weft.select %{{.*}}, %[[A]], %{{.*}} : tensor<1x1xf32>
// CHECK-NEXT: %[[Q0:.*]] = weft.fp8_quantize %[[W]], %[[S]] {format = f8E4M3FN} : tensor<16x32xf32>, tensor<1x1xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.all_gather %[[Q0]] over @mesh ["dp"] dim 0 : tensor<16x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: weft.assign "w.fp8.gathered", %[[Q]] : tensor<32x32xf32>
// CHECK-NEXT: weft.assign "w.fp8.amax.gathered", %[[S]] : tensor<1x1xf32>
// CHECK: %[[R:.*]] = weft.reshape %[[A]] : tensor<1x1xf32> -> tensor<f32>
// CHECK-NEXT: %[[M:.*]] = weft.max %[[STEPMAX]], %[[R]] : tensor<f32>
// CHECK-NEXT: weft.assign "w.fp8.weight_amax_history.step_max", %[[M]] : tensor<f32>
// The second layer's input gradient reads its weight's quantization too.
// CHECK-LABEL: func.func @accumulate
// CHECK-DAG: %[[V:.*]] = weft.param "v.fp8.gathered" init(zeros) state {weft.transient} : tensor<32x32xf32>
// CHECK-DAG: %[[VA:.*]] = weft.param "v.fp8.amax.gathered" init(zeros) state {weft.transient} : tensor<1x1xf32>
// CHECK-NOT: weft.all_gather
// CHECK-NOT: weft.fp8_amax %[[V]]
// CHECK: %[[QV:.*]] = weft.fp8_quantize %[[V]], %[[VA]] {format = f8E4M3FN} : tensor<32x32xf32>, tensor<1x1xf32>
// CHECK-NEXT: weft.matmul %{{.*}}, %[[QV]] : tensor<32x32xf32>, tensor<32x32xf32>
// CHECK-NOT: weft.fp8_amax %[[V]]
// CHECK: weft.matmul %{{.*}}, %[[QV]] transpose_rhs
// CHECK-NOT: weft.all_gather
// CHECK-LABEL: func.func @train_step

// Lowered with FP8 storage, @gather moves codes: each shard is encoded by
// the all-reduced maximum and the codes gathered (a byte an element)
// straight into the state's storage (no arena buffer, no assign), which
// holds them as they are, nothing decoded. @accumulate's
// GEMMs read the held codes with scales from the held maximum: the
// forward through a transposing copy (k contiguous), the input gradient
// as stored; nothing is cast from values.
// SCHED: sched.param @v.fp8.gathered init(zeros) state {transient} : !sched.buffer<32x32xf8E4M3FN>
// SCHED-LABEL: sched.program @gather
// SCHED: %[[W:.*]] = sched.get @w.fp8.gathered : <32x32xf8E4M3FN>
// SCHED: sched.collective all_reduce max
// SCHED: sched.fp8_encode %{{.*}}, %[[A:.*]], %[[C:.*]] : !sched.buffer<16x32xf32>, !sched.buffer<1x1xf32>, !sched.buffer<16x32xf8E4M3FN>
// SCHED: sched.collective all_gather none %[[C]] -> %[[W]] over @mesh ["dp"] {{.*}}: <16x32xf8E4M3FN> -> <32x32xf8E4M3FN>
// SCHED-NOT: fp8_decode
// SCHED-NOT: sched.assign @w.fp8.gathered
// SCHED: sched.assign @w.fp8.amax.gathered = %[[A]] : <1x1xf32>
// SCHED-LABEL: sched.program @accumulate
// SCHED: %[[V:.*]] = sched.get @v.fp8.gathered : <32x32xf8E4M3FN>
// SCHED-NEXT: %[[VM:.*]] = sched.get @v.fp8.amax.gathered : <1x1xf32>
// SCHED-NOT: all_gather
// SCHED-NOT: fp8_decode
// SCHED: sched.fp8_scale_inv %[[V]], %[[VM]], %[[I:.*]] : !sched.buffer<32x32xf8E4M3FN>, !sched.buffer<1x1xf32>, !sched.buffer<1xf32>
// SCHED: sched.copy %[[V]] -> %[[T:.*]] sizes [1, 32, 32] src [0, 1024, 32, 1] dst [0, 1024, 1, 32]
// SCHED: sched.gemm %{{.*}}, %[[T]] -> %{{.*}} scales(%{{.*}}, %[[I]] :
// SCHED: sched.gemm %{{.*}}, %[[V]] -> %{{.*}} scales(%{{.*}}, %[[I]] : {{.*}} : <32x32xf8E5M2>, <32x32xf8E4M3FN>
// SCHED-NOT: all_gather
// SCHED-NOT: fp8_decode
// SCHED: sched.return

// Row-wise: the second layer's backward re-quantizes its weight in other
// blocks for the input gradient, and two quantized copies would hold
// twice the values: "v" keeps its values, quantized per micro-batch as
// without FP8. The first layer has no input gradient: one quantization,
// its column maxima max all-reduced over dp in @gather.
// ROWS-LABEL: func.func @gather()
// ROWS-DAG: weft.param "w.fp8.gathered" init(zeros) state {weft.transient} : tensor<32x32xf32>
// ROWS-DAG: weft.param "w.fp8.amax.gathered" init(zeros) state {weft.transient} : tensor<1x32xf32>
// ROWS-DAG: weft.param "v.gathered" init(zeros) state {weft.transient} : tensor<32x32xf32>
// ROWS: %[[A0:.*]] = weft.fp8_amax %{{.*}} : tensor<16x32xf32> -> tensor<1x32xf32>
// ROWS-NEXT: weft.all_reduce max %[[A0]] over @mesh ["dp"] : tensor<1x32xf32>
// ROWS: weft.assign "w.fp8.gathered"
// ROWS: %[[VW:.*]] = weft.all_gather %{{.*}} over @mesh ["dp"] dim 0 : tensor<16x32xf32> -> tensor<32x32xf32>
// ROWS-NEXT: weft.assign "v.gathered", %[[VW]]
// ROWS-NOT: fp8
// ROWS-LABEL: func.func @accumulate
// ROWS: %[[V:.*]] = weft.param "v.gathered"
// ROWS: weft.fp8_amax %[[V]] : tensor<32x32xf32> -> tensor<1x32xf32>
// ROWS: weft.fp8_amax %[[V]] : tensor<32x32xf32> -> tensor<32x1xf32>
// With FP8 storage the two copies are held as codes, a byte an element
// each, no more than the values (weft-gather-per-step{fp8-codes}): "v"
// gets a state per quantization, the input gradient's by its row maxima
// (gathered with it) and the forward's by its column maxima (all-reduced).
// ROWCODES-LABEL: func.func @gather()
// ROWCODES-NOT: "v.gathered"
// ROWCODES: %[[R:.*]] = weft.fp8_amax %[[V:.*]] : tensor<16x32xf32> -> tensor<16x1xf32>
// ROWCODES-NEXT: %[[RG:.*]] = weft.all_gather %[[R]] over @mesh ["dp"] dim 0 : tensor<16x1xf32> -> tensor<32x1xf32>
// ROWCODES: %[[Q:.*]] = weft.fp8_quantize %[[V]], %[[R]]
// ROWCODES-NEXT: %[[QG:.*]] = weft.all_gather %[[Q]] over @mesh ["dp"] dim 0
// ROWCODES-NEXT: weft.assign "v.fp8.gathered", %[[QG]]
// ROWCODES-NEXT: weft.assign "v.fp8.amax.gathered", %[[RG]]
// ROWCODES: weft.assign "v.fp8_1.gathered"
// ROWCODES-NEXT: weft.assign "v.fp8_1.amax.gathered"
// ROWCODES-LABEL: func.func @accumulate
// ROWCODES-NOT: "v.gathered"
// ROWCODES-NOT: weft.all_gather
// ROWCODES-LABEL: func.func @train_step

// Lowered with FP8 storage, both states hold codes; the input gradient's
// GEMM reads one as it is (row scales), the forward's a transposing copy
// of the other (its column maxima are the transposed operand's rows).
// SCHEDROWS-DAG: sched.param @v.fp8.gathered init(zeros) state {transient} : !sched.buffer<32x32xf8E4M3FN>
// SCHEDROWS-DAG: sched.param @v.fp8_1.gathered init(zeros) state {transient} : !sched.buffer<32x32xf8E4M3FN>
// SCHEDROWS-LABEL: sched.program @accumulate
// SCHEDROWS-DAG: %[[VB:.*]] = sched.get @v.fp8.gathered : <32x32xf8E4M3FN>
// SCHEDROWS-DAG: %[[VF:.*]] = sched.get @v.fp8_1.gathered : <32x32xf8E4M3FN>
// SCHEDROWS-NOT: fp8_decode
// SCHEDROWS: sched.copy %[[VF]] -> %[[T:.*]] sizes [1, 32, 32] src [0, 1024, 32, 1] dst [0, 1024, 1, 32]
// SCHEDROWS: sched.fp8_scale_inv %[[VF]], %{{.*}}, %[[TI:.*]] {scale_mode = "rows", transpose} : !sched.buffer<32x32xf8E4M3FN>, !sched.buffer<1x32xf32>, !sched.buffer<32xf32>
// SCHEDROWS: sched.gemm %{{.*}}, %[[T]] -> %{{.*}} scales(%{{.*}}, %[[TI]] :
// SCHEDROWS: sched.fp8_scale_inv %[[VB]], %{{.*}}, %[[BI:.*]] {scale_mode = "rows"} : !sched.buffer<32x32xf8E4M3FN>, !sched.buffer<32x1xf32>, !sched.buffer<32xf32>
// SCHEDROWS: sched.gemm %{{.*}}, %[[VB]] -> %{{.*}} scales(%{{.*}}, %[[BI]] :
// SCHEDROWS-NOT: fp8_decode
// SCHEDROWS: sched.return
func.func @forward(%x: tensor<64x32xf32> {weft.input = "tokens"}) -> (tensor<f32> {weft.output = "loss"}) {
  %w = weft.param "w" init(normal, 0.1) {weft.layer = 0 : i64} : tensor<32x32xf32>
  %h = weft.matmul %x, %w : tensor<64x32xf32>, tensor<32x32xf32>
  %v = weft.param "v" init(normal, 0.1) {weft.layer = 1 : i64} : tensor<32x32xf32>
  %y = weft.matmul %h, %v : tensor<64x32xf32>, tensor<32x32xf32>
  %loss = weft.reduce_mean %y dims [0, 1] : tensor<64x32xf32>
  return %loss : tensor<f32>
}

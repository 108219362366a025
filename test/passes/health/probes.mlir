// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-probes{probes=activations})' | FileCheck %s --check-prefix=ACT
// RUN: weft-opt %s --pass-pipeline='builtin.module(weft-probes{probes=activations},weft-autodiff,weft-eval-forward,weft-optimizer-adamw{layer-grad-norms=true})' | FileCheck %s --check-prefix=STEP
// RUN: not weft-opt %s --pass-pipeline='builtin.module(weft-probes{probes=activations,weights})' 2>&1 | FileCheck %s --check-prefix=WORD

// Two layers of norm -> matmul -> silu -> matmul -> residual, a head and
// the loss. Layers are the parameters' weft.layer; these names have no
// numbered component, so the layers are called layer.0 and layer.1.
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %n0w = weft.param "l0.norm" init(ones) {weft.layer = 0 : i64} : tensor<8xf32>
  %up0 = weft.param "l0.up" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x16xf32>
  %dn0 = weft.param "l0.down" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<16x8xf32>
  %n0 = weft.rms_norm %x, %n0w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h0 = weft.matmul %n0, %up0 : tensor<4x8xf32>, tensor<8x16xf32>
  %a0 = weft.silu %h0 : tensor<4x16xf32>
  %d0 = weft.matmul %a0, %dn0 : tensor<4x16xf32>, tensor<16x8xf32>
  %r0 = weft.add %x, %d0 : tensor<4x8xf32>
  %n1w = weft.param "l1.norm" init(ones) {weft.layer = 1 : i64} : tensor<8xf32>
  %up1 = weft.param "l1.up" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<8x16xf32>
  %dn1 = weft.param "l1.down" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<16x8xf32>
  %n1 = weft.rms_norm %r0, %n1w {epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h1 = weft.matmul %n1, %up1 : tensor<4x8xf32>, tensor<8x16xf32>
  %a1 = weft.silu %h1 : tensor<4x16xf32>
  %d1 = weft.matmul %a1, %dn1 : tensor<4x16xf32>, tensor<16x8xf32>
  %r1 = weft.add %r0, %d1 : tensor<4x8xf32>
  %head = weft.param "head" init(normal, 2.0e-02) : tensor<8x32xf32>
  %logits = weft.matmul %r1, %head : tensor<4x8xf32>, tensor<8x32xf32>
  %loss = weft.cross_entropy %logits, %labels : tensor<4x32xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

// What leaves each layer is its residual add (%r0 for layer 0, not %d0 or
// anything before): its mean square accumulates into a transient state
// parameter, folded "rms", and its largest magnitude (one fp8_amax block)
// into one folded "max"; each takes the layer's weft.layer (a pipeline
// keeps it on that layer's stage).
// ACT-LABEL: func.func @forward
// ACT: weft.param "probe.layer.0.act_rms" init(zeros) state {weft.layer = 0 : i64, weft.probe = "layer.0/act_rms", weft.probe_fold = "rms", weft.transient} : tensor<f32>
// ACT: weft.param "probe.layer.0.act_max_abs" init(zeros) state {weft.layer = 0 : i64, weft.probe = "layer.0/act_max_abs", weft.probe_fold = "max", weft.transient} : tensor<f32>
// ACT: %[[R0:.*]] = weft.add %arg0, %{{.*}} : tensor<4x8xf32>
// ACT-NEXT: %[[SQ:.*]] = weft.square %[[R0]]
// ACT-NEXT: %[[MEAN:.*]] = weft.reduce_mean %[[SQ]] dims [0, 1]
// ACT-NEXT: %[[ACC:.*]] = weft.add %{{.*}}, %[[MEAN]]
// ACT-NEXT: weft.assign "probe.layer.0.act_rms", %[[ACC]]
// ACT-NEXT: %[[AMAX:.*]] = weft.fp8_amax %[[R0]] : tensor<4x8xf32> -> tensor<1x1xf32>
// ACT-NEXT: %[[SCALAR:.*]] = weft.reshape %[[AMAX]]
// ACT-NEXT: %[[MAX:.*]] = weft.max %{{.*}}, %[[SCALAR]]
// ACT-NEXT: weft.assign "probe.layer.0.act_max_abs", %[[MAX]]
// ACT: %[[R1:.*]] = weft.add %[[R0]], %{{.*}} : tensor<4x8xf32>
// ACT-NEXT: weft.square %[[R1]]
// ACT: weft.assign "probe.layer.1.act_max_abs"
// ACT: weft.cross_entropy

// The evaluation forward has no probe; the training step keeps the
// forward's and adds each layer's gradient norm, written once a step.
// STEP-LABEL: func.func @forward
// STEP-NOT: probe
// STEP-LABEL: func.func @train_step
// STEP-LABEL: func.func @step
// STEP: weft.param "probe.layer.0.grad_norm" init(zeros) state {weft.probe = "layer.0/grad_norm", weft.probe_fold = "last", weft.transient} : tensor<f32>
// STEP: weft.param "probe.layer.1.grad_norm"
// STEP: weft.assign "probe.layer.0.act_rms"
// STEP: weft.assign "probe.layer.1.act_max_abs"
// The global norm's root, then each layer's.
// STEP: weft.sqrt
// STEP: %[[N0:.*]] = weft.sqrt %{{.*}} : tensor<f32>
// STEP-NEXT: weft.assign "probe.layer.0.grad_norm", %[[N0]]
// STEP: %[[N1:.*]] = weft.sqrt %{{.*}} : tensor<f32>
// STEP-NEXT: weft.assign "probe.layer.1.grad_norm", %[[N1]]

// WORD: weft-probes: unknown probe 'weights' (known: activations, attention, router, gradients, all)

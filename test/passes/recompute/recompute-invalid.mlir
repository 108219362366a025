// Every error of weft-recompute's options, each a file of its own
// (split-file): an option applies to the whole run. (weft-train's refusal
// of a budget comes while the pipeline is built, before there is IR to
// place it on: recompute.mlir checks it as text.)
// RUN: rm -rf %t && split-file %s %t
// RUN: weft-opt %t/policy.mlir -verify-diagnostics --pass-pipeline='builtin.module(func.func(weft-recompute{policy=most}))'
// RUN: weft-opt %t/count.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=full*3}))'
// RUN: weft-opt %t/tensors.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=tensors:1,none}))'
// RUN: weft-opt %t/many.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=tensors:0,none}))'
// RUN: weft-opt %t/spelling.mlir -verify-diagnostics --pass-pipeline='builtin.module(func.func(weft-recompute{policy=tensors:0+x}))'
// RUN: weft-opt %t/budget.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=budget=2}))'

//--- policy.mlir
// expected-error @+1 {{weft-recompute: recompute 'most': unknown policy 'most' (expected none, full, selective, tensors:i+j (which of a layer's candidates), a policy per layer such as full*2,selective*30, or budget=<GiB>)}}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

//--- count.mlir
// A policy per layer must name each layer the step has (two here). The
// error is on the step autodiff made, at the forward's place.
// expected-error @+1 {{weft-recompute: the choice 'full*3' names 3 layers' policies; the step has 2 layers}}
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x8xf32>
  %w1 = weft.param "l1.w" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<8x8xf32>
  %h0 = weft.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %loss = weft.cross_entropy %h1, %labels : tensor<4x8xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

//--- budget.mlir
// A budget is the compiler's to resolve (it needs the memory plan).
// expected-error @+1 {{weft-recompute: a budget is resolved by the compiler (weftc compile --recompute budget=...), which picks a policy per layer; pass that}}
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x8xf32>
  %h0 = weft.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  %loss = weft.cross_entropy %h0, %labels : tensor<4x8xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

//--- tensors.mlir
// A per-tensor choice names candidates the layer has: layer 0's one is h0
// (its output h1 is the next layer's input).
// expected-error @+1 {{weft-recompute: layer 0 has 1 recomputation candidate; the choice names 'tensors:1'}}
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x8xf32>
  %w1 = weft.param "l1.w" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<8x8xf32>
  %h0 = weft.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  %a0 = weft.silu %h0 : tensor<4x8xf32>
  %h1 = weft.matmul %a0, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %loss = weft.cross_entropy %h1, %labels : tensor<4x8xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

//--- spelling.mlir
// expected-error @+1 {{weft-recompute: recompute 'tensors:0+x': unknown policy 'tensors:0+x' (expected none, full, selective, tensors:i+j}}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

//--- many.mlir
// A mask holds 64 candidates: layer 0 has 65 (h0 and 64 silus; the last
// is layer 1's input).
// expected-error @+1 {{weft-recompute: layer 0 has 65 recomputation candidates, more than a 'tensors:' choice can name (64); give it a policy}}
func.func @forward(%x: tensor<4x8xf32> {weft.input = "x"},
                   %labels: tensor<4xi32> {weft.input = "labels"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %w0 = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<8x8xf32>
  %w1 = weft.param "l1.w" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<8x8xf32>
  %s0 = weft.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  %s1 = weft.silu %s0 : tensor<4x8xf32>
  %s2 = weft.silu %s1 : tensor<4x8xf32>
  %s3 = weft.silu %s2 : tensor<4x8xf32>
  %s4 = weft.silu %s3 : tensor<4x8xf32>
  %s5 = weft.silu %s4 : tensor<4x8xf32>
  %s6 = weft.silu %s5 : tensor<4x8xf32>
  %s7 = weft.silu %s6 : tensor<4x8xf32>
  %s8 = weft.silu %s7 : tensor<4x8xf32>
  %s9 = weft.silu %s8 : tensor<4x8xf32>
  %s10 = weft.silu %s9 : tensor<4x8xf32>
  %s11 = weft.silu %s10 : tensor<4x8xf32>
  %s12 = weft.silu %s11 : tensor<4x8xf32>
  %s13 = weft.silu %s12 : tensor<4x8xf32>
  %s14 = weft.silu %s13 : tensor<4x8xf32>
  %s15 = weft.silu %s14 : tensor<4x8xf32>
  %s16 = weft.silu %s15 : tensor<4x8xf32>
  %s17 = weft.silu %s16 : tensor<4x8xf32>
  %s18 = weft.silu %s17 : tensor<4x8xf32>
  %s19 = weft.silu %s18 : tensor<4x8xf32>
  %s20 = weft.silu %s19 : tensor<4x8xf32>
  %s21 = weft.silu %s20 : tensor<4x8xf32>
  %s22 = weft.silu %s21 : tensor<4x8xf32>
  %s23 = weft.silu %s22 : tensor<4x8xf32>
  %s24 = weft.silu %s23 : tensor<4x8xf32>
  %s25 = weft.silu %s24 : tensor<4x8xf32>
  %s26 = weft.silu %s25 : tensor<4x8xf32>
  %s27 = weft.silu %s26 : tensor<4x8xf32>
  %s28 = weft.silu %s27 : tensor<4x8xf32>
  %s29 = weft.silu %s28 : tensor<4x8xf32>
  %s30 = weft.silu %s29 : tensor<4x8xf32>
  %s31 = weft.silu %s30 : tensor<4x8xf32>
  %s32 = weft.silu %s31 : tensor<4x8xf32>
  %s33 = weft.silu %s32 : tensor<4x8xf32>
  %s34 = weft.silu %s33 : tensor<4x8xf32>
  %s35 = weft.silu %s34 : tensor<4x8xf32>
  %s36 = weft.silu %s35 : tensor<4x8xf32>
  %s37 = weft.silu %s36 : tensor<4x8xf32>
  %s38 = weft.silu %s37 : tensor<4x8xf32>
  %s39 = weft.silu %s38 : tensor<4x8xf32>
  %s40 = weft.silu %s39 : tensor<4x8xf32>
  %s41 = weft.silu %s40 : tensor<4x8xf32>
  %s42 = weft.silu %s41 : tensor<4x8xf32>
  %s43 = weft.silu %s42 : tensor<4x8xf32>
  %s44 = weft.silu %s43 : tensor<4x8xf32>
  %s45 = weft.silu %s44 : tensor<4x8xf32>
  %s46 = weft.silu %s45 : tensor<4x8xf32>
  %s47 = weft.silu %s46 : tensor<4x8xf32>
  %s48 = weft.silu %s47 : tensor<4x8xf32>
  %s49 = weft.silu %s48 : tensor<4x8xf32>
  %s50 = weft.silu %s49 : tensor<4x8xf32>
  %s51 = weft.silu %s50 : tensor<4x8xf32>
  %s52 = weft.silu %s51 : tensor<4x8xf32>
  %s53 = weft.silu %s52 : tensor<4x8xf32>
  %s54 = weft.silu %s53 : tensor<4x8xf32>
  %s55 = weft.silu %s54 : tensor<4x8xf32>
  %s56 = weft.silu %s55 : tensor<4x8xf32>
  %s57 = weft.silu %s56 : tensor<4x8xf32>
  %s58 = weft.silu %s57 : tensor<4x8xf32>
  %s59 = weft.silu %s58 : tensor<4x8xf32>
  %s60 = weft.silu %s59 : tensor<4x8xf32>
  %s61 = weft.silu %s60 : tensor<4x8xf32>
  %s62 = weft.silu %s61 : tensor<4x8xf32>
  %s63 = weft.silu %s62 : tensor<4x8xf32>
  %s64 = weft.silu %s63 : tensor<4x8xf32>
  %s65 = weft.silu %s64 : tensor<4x8xf32>
  %h1 = weft.matmul %s65, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %loss = weft.cross_entropy %h1, %labels : tensor<4x8xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

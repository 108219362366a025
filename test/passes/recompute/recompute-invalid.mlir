// Every error of weft-recompute's options, each a file of its own
// (split-file): an option applies to the whole run. (weft-train's refusal
// of a budget comes while the pipeline is built, before there is IR to
// place it on: recompute.mlir checks it as text.)
// RUN: rm -rf %t && split-file %s %t
// RUN: weft-opt %t/policy.mlir -verify-diagnostics --pass-pipeline='builtin.module(func.func(weft-recompute{policy=most}))'
// RUN: weft-opt %t/count.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=full*3}))'
// RUN: weft-opt %t/budget.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-autodiff,func.func(weft-recompute{policy=budget=2}))'

//--- policy.mlir
// expected-error @+1 {{weft-recompute: recompute 'most': unknown policy 'most' (expected none, full, selective, a policy per layer such as full*2,selective*30, or budget=<GiB>)}}
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

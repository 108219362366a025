// Every error of weft-fp8's options, each a file of its own (split-file):
// an option applies to the whole run, so each needs its own weft-opt.
// RUN: rm -rf %t && split-file %s %t
// RUN: weft-opt %t/recipe.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=delayed})'
// RUN: weft-opt %t/list.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=none,fast})'
// RUN: weft-opt %t/count.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=none*0,tensorwise})'
// RUN: weft-opt %t/layers.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise*3})'
// RUN: weft-opt %t/history.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise-delayed history=0})'
// RUN: weft-opt %t/margin.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=tensorwise-delayed margin=-2})'
// RUN: weft-opt %t/keep.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=head,middle})'
// RUN: weft-opt %t/min-dim.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise min-dim=-1})'
// RUN: weft-opt %t/device.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise device=dgx-h200:1})'
// RUN: cd %t && weft-opt peak.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise keep=none device=no-f32.json})'
// RUN: weft-opt %t/plan.mlir -verify-diagnostics --pass-pipeline='builtin.module(weft-fp8{recipe=rowwise plan=dp=x})'

//--- recipe.mlir
// expected-error @+1 {{weft-fp8: FP8 recipe 'delayed': unknown recipe 'delayed' (supported: none, tensorwise, tensorwise-delayed, rowwise, blockwise, mxfp8, or a recipe per layer such as none,tensorwise*30,none)}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- list.mlir
// expected-error @+1 {{weft-fp8: FP8 recipe 'none,fast': unknown recipe 'fast'}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- count.mlir
// expected-error @+1 {{weft-fp8: FP8 recipe 'none*0,tensorwise': '0' is not a layer count from 1 to 4096}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- layers.mlir
// A recipe per layer must name each layer the model has (two here).
// expected-error @+1 {{weft-fp8: the recipe names 3 layers, but the model has 2 (e.g. tensorwise*2)}}
func.func @forward(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %w0 = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<32x32xf32>
  %w1 = weft.param "l1.w" init(normal, 2.0e-02) {weft.layer = 1 : i64} : tensor<32x32xf32>
  %h0 = weft.matmul %x, %w0 : tensor<16x32xf32>, tensor<32x32xf32>
  %h1 = weft.matmul %h0, %w1 : tensor<16x32xf32>, tensor<32x32xf32>
  return %h1 : tensor<16x32xf32>
}

//--- history.mlir
// expected-error @+1 {{weft-fp8: history must be in [1, 2^20] steps, not 0}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- margin.mlir
// expected-error @+1 {{weft-fp8: margin must be in [0, 32], not -2}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- keep.mlir
// expected-error @+1 {{weft-fp8: the FP8 keep list names 'middle'; it takes head, first, last or none}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- min-dim.mlir
// expected-error @+1 {{weft-fp8: min-dim must be at least 0, not -1}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- device.mlir
// expected-error @+1 {{weft-fp8: device 'dgx-h200:1': dgx-h200:1: cannot read (No such file or directory); not a preset either (cpu:N, dgx-a100:N, dgx-h100:N, h200:N)}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- plan.mlir
// The plan each rank's shapes are judged by (checked with or without a
// device).
// expected-error @+1 {{weft-fp8: plan: mesh axis 'dp' needs a positive size, got 'x'}}
func.func @forward(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  return %x : tensor<16x16xf32>
}

//--- no-f32.json
{"nodes": 1, "devices_per_node": 1,
 "device": {"memory_gb": 80, "memory_bandwidth_gbps": 3350,
            "peak_tflops": {"bf16": 989, "fp8": 1979}},
 "intra_node": {"bandwidth_gbps": 450, "latency_us": 2},
 "inter_node": {"bandwidth_gbps": 50, "latency_us": 5}}

//--- peak.mlir
// An f32 model's GEMMs are judged against the device's f32 rate, which
// this device does not give.
// expected-error @+1 {{weft-fp8: device 'no-f32.json' has no f32 peak to judge FP8 against}}
func.func @forward(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %w = weft.param "l0.w" init(normal, 2.0e-02) {weft.layer = 0 : i64} : tensor<32x32xf32>
  %y = weft.matmul %x, %w : tensor<16x32xf32>, tensor<32x32xf32>
  return %y : tensor<16x32xf32>
}

// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s
// RUN: weft-opt %s --mlir-print-op-generic | weft-opt | FileCheck %s

// Every weft op parses, verifies, infers its result type and prints back in
// its custom form.

// CHECK-LABEL: func.func @params_and_constants
func.func @params_and_constants() -> (tensor<4x8xf32>, tensor<8xbf16>, tensor<2xf16>, tensor<3xf32>, tensor<2x2xf32>) {
  // CHECK: weft.param "w" init(normal, 2.000000e-02) : tensor<4x8xf32>
  %w = weft.param "w" init(normal, 0.02) : tensor<4x8xf32>
  // CHECK: weft.param "g" init(ones) : tensor<8xbf16>
  %g = weft.param "g" init(ones) : tensor<8xbf16>
  // CHECK: weft.param "b" init(zeros) : tensor<2xf16>
  %b = weft.param "b" init(zeros) : tensor<2xf16>
  // CHECK: weft.param "u" init(uniform, 1.000000e-01) : tensor<3xf32>
  %u = weft.param "u" init(uniform, 0.1) : tensor<3xf32>
  // CHECK: weft.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %c = weft.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  return %w, %g, %b, %u, %c : tensor<4x8xf32>, tensor<8xbf16>, tensor<2xf16>, tensor<3xf32>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: weft.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = weft.add %x, %y : tensor<4x8xf32>
  // CHECK: weft.sub
  %1 = weft.sub %0, %y : tensor<4x8xf32>
  // CHECK: weft.mul
  %2 = weft.mul %1, %y : tensor<4x8xf32>
  // CHECK: weft.div
  %3 = weft.div %2, %y : tensor<4x8xf32>
  // CHECK: weft.max
  %4 = weft.max %3, %y : tensor<4x8xf32>
  // CHECK: weft.neg
  %5 = weft.neg %4 : tensor<4x8xf32>
  // CHECK: weft.exp
  %6 = weft.exp %5 : tensor<4x8xf32>
  // CHECK: weft.log
  %7 = weft.log %6 : tensor<4x8xf32>
  // CHECK: weft.tanh
  %8 = weft.tanh %7 : tensor<4x8xf32>
  // CHECK: weft.sqrt
  %9 = weft.sqrt %8 : tensor<4x8xf32>
  // CHECK: weft.rsqrt
  %10 = weft.rsqrt %9 : tensor<4x8xf32>
  // CHECK: weft.square
  %11 = weft.square %10 : tensor<4x8xf32>
  // CHECK: weft.pow %{{.*}} {exponent = 3.000000e+00 : f64} : tensor<4x8xf32>
  %12 = weft.pow %11 {exponent = 3.0 : f64} : tensor<4x8xf32>
  // CHECK: weft.gelu
  %13 = weft.gelu %12 : tensor<4x8xf32>
  // CHECK: weft.silu
  %14 = weft.silu %13 : tensor<4x8xf32>
  return %14 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @narrow_types
func.func @narrow_types(%x: tensor<4xbf16>, %y: tensor<4xf8E4M3FN>, %z: tensor<4xf8E5M2>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf8E5M2>) {
  // CHECK: weft.add %{{.*}}, %{{.*}} : tensor<4xbf16>
  %0 = weft.add %x, %x : tensor<4xbf16>
  // CHECK: weft.cast %{{.*}} : tensor<4xf8E4M3FN> to tensor<4xf32>
  %1 = weft.cast %y : tensor<4xf8E4M3FN> to tensor<4xf32>
  // CHECK: weft.mul %{{.*}}, %{{.*}} : tensor<4xf8E5M2>
  %2 = weft.mul %z, %z : tensor<4xf8E5M2>
  return %0, %1, %2 : tensor<4xbf16>, tensor<4xf32>, tensor<4xf8E5M2>
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>, %a: tensor<3x4x5xf32>, %b: tensor<3x6x4xf32>) -> (tensor<2x8x256xf32>, tensor<3x5x6xf32>) {
  // CHECK: weft.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x8x64xf32>, tensor<256x64xf32>
  %0 = weft.matmul %x, %w transpose_rhs : tensor<2x8x64xf32>, tensor<256x64xf32>
  // CHECK: weft.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<3x4x5xf32>, tensor<3x6x4xf32>
  %1 = weft.matmul %a, %b transpose_lhs transpose_rhs : tensor<3x4x5xf32>, tensor<3x6x4xf32>
  return %0, %1 : tensor<2x8x256xf32>, tensor<3x5x6xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x8x64xf32>, %b: tensor<64xf32>, %p: tensor<32x64xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<40x64xf32>, tensor<2x8x64xbf16>) {
  // CHECK: weft.reshape %{{.*}} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %0 = weft.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  // CHECK: weft.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %1 = weft.transpose %0 [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  // CHECK: weft.broadcast %{{.*}} dims [2] : tensor<64xf32> -> tensor<2x8x64xf32>
  %2 = weft.broadcast %b dims [2] : tensor<64xf32> -> tensor<2x8x64xf32>
  // CHECK: weft.slice %{{.*}} [0, 0] to [8, 64] : tensor<32x64xf32>
  %3 = weft.slice %p [0, 0] to [8, 64] : tensor<32x64xf32>
  // CHECK: weft.concat %{{.*}}, %{{.*}} dim 0 : tensor<32x64xf32>, tensor<8x64xf32>
  %4 = weft.concat %p, %3 dim 0 : tensor<32x64xf32>, tensor<8x64xf32>
  // CHECK: weft.cast %{{.*}} : tensor<2x8x64xf32> to tensor<2x8x64xbf16>
  %5 = weft.cast %x : tensor<2x8x64xf32> to tensor<2x8x64xbf16>
  return %1, %2, %3, %4, %5 : tensor<2x4x8x16xf32>, tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<40x64xf32>, tensor<2x8x64xbf16>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8x16xf32>) -> (tensor<4xf32>, tensor<4x16xf32>, tensor<f32>) {
  // CHECK: weft.reduce_sum %{{.*}} dims [1, 2] : tensor<4x8x16xf32>
  %0 = weft.reduce_sum %x dims [1, 2] : tensor<4x8x16xf32>
  // CHECK: weft.reduce_max %{{.*}} dims [1] : tensor<4x8x16xf32>
  %1 = weft.reduce_max %x dims [1] : tensor<4x8x16xf32>
  // CHECK: weft.reduce_mean %{{.*}} dims [0, 1, 2] : tensor<4x8x16xf32>
  %2 = weft.reduce_mean %x dims [0, 1, 2] : tensor<4x8x16xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4x16xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @nn
func.func @nn(%ids: tensor<2x8xi32>, %table: tensor<256x64xf32>, %g: tensor<64xf32>, %q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x256xf32>) {
  // CHECK: weft.embedding %{{.*}}, %{{.*}} : tensor<256x64xf32>, tensor<2x8xi32>
  %h = weft.embedding %table, %ids : tensor<256x64xf32>, tensor<2x8xi32>
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>
  %ln = weft.layer_norm %h, %g, %g {epsilon = 1.0e-6 : f64} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>
  // CHECK: weft.rms_norm %{{.*}}, %{{.*}} : tensor<2x8x64xf32>, tensor<64xf32>
  %rms = weft.rms_norm %h, %g : tensor<2x8x64xf32>, tensor<64xf32>
  // CHECK: weft.rope %{{.*}} {theta = 5.000000e+05 : f64} : tensor<2x8x4x16xf32>
  %r = weft.rope %q {theta = 500000.0 : f64} : tensor<2x8x4x16xf32>
  // CHECK: %{{.*}}, %{{.*}} = weft.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %a, %lse = weft.attention %r, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  // CHECK: weft.softmax %{{.*}} dim 2 : tensor<2x8x64xf32>
  %s = weft.softmax %h dim 2 : tensor<2x8x64xf32>
  // CHECK: weft.dropout %{{.*}} {rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  %d = weft.dropout %s {rate = 0.1 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  // CHECK: weft.dropout %{{.*}} microbatch %{{.*}} : tensor<f32> {microbatches = 2 : i64, rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  %mb = weft.constant dense<1.0> : tensor<f32>
  %pos = weft.constant dense<[1, 0, 3, 2, 5, 4, 7, 6]> : tensor<8xi32>
  %dm = weft.dropout %s microbatch %mb : tensor<f32> {microbatches = 2 : i64, rate = 0.1 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  // CHECK: weft.dropout %{{.*}} positions %{{.*}} : tensor<8xi32> {rate = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  %dp = weft.dropout %s positions %pos : tensor<8xi32> {rate = 0.1 : f64, seed = 7 : i64} : tensor<2x8x64xf32>
  // CHECK: weft.attention %{{.*}} scale = 2.500000e-01 causal dropout = 1.000000e-01 step %{{.*}} : tensor<f32> {seed = 3 : i64} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %ad, %lsed = weft.attention %r, %kv, %kv scale = 0.25 causal dropout = 0.1 step %mb : tensor<f32> {seed = 3 : i64} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  %logits = weft.matmul %h, %table transpose_rhs : tensor<2x8x64xf32>, tensor<256x64xf32>
  // CHECK: weft.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : tensor<2x8x256xf32>, tensor<2x8xi32>
  %loss = weft.cross_entropy %logits, %ids {ignore_index = 0 : i64} : tensor<2x8x256xf32>, tensor<2x8xi32>
  // CHECK: weft.one_hot %{{.*}} : tensor<2x8xi32> -> tensor<2x8x256xf32>
  %oh = weft.one_hot %ids : tensor<2x8xi32> -> tensor<2x8x256xf32>
  return %ln, %rms, %d, %r, %a, %s, %loss, %oh : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x256xf32>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<16x64xf32>, %router: tensor<16x8xf32>, %w: tensor<8x64x64xf32>) -> (tensor<16x64xf32>, tensor<16x3xf32>, tensor<16x3xi32>) {
  // CHECK: %values, %indices = weft.topk %{{.*}} k = 3 : tensor<16x8xf32>
  %v, %i = weft.topk %router k = 3 : tensor<16x8xf32>
  // CHECK: %weights, %indices_{{.*}} = weft.topk_gating %{{.*}} k = 2 normalize : tensor<16x8xf32>
  %gw, %ge = weft.topk_gating %router k = 2 normalize : tensor<16x8xf32>
  // CHECK: %positions, %counts = weft.expert_route %{{.*}} experts = 8 capacity = 4 : tensor<16x2xi32>
  %pos, %counts = weft.expert_route %ge experts = 8 capacity = 4 : tensor<16x2xi32>
  // CHECK: weft.expert_route %{{.*}} experts = 8 : tensor<16x2xi32>
  %pos2, %counts2 = weft.expert_route %ge experts = 8 : tensor<16x2xi32>
  // CHECK: weft.expert_dispatch %{{.*}}, %{{.*}} rows = 32 : tensor<16x64xf32>, tensor<16x2xi32>
  %d = weft.expert_dispatch %x, %pos rows = 32 : tensor<16x64xf32>, tensor<16x2xi32>
  // CHECK: weft.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<8x64x64xf32>, tensor<8xi32>
  %y = weft.grouped_matmul %d, %w, %counts : tensor<32x64xf32>, tensor<8x64x64xf32>, tensor<8xi32>
  // CHECK: weft.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_rhs : tensor<32x64xf32>, tensor<8x64x64xf32>, tensor<8xi32>
  %y2 = weft.grouped_matmul %y, %w, %counts transpose_rhs : tensor<32x64xf32>, tensor<8x64x64xf32>, tensor<8xi32>
  // CHECK: weft.grouped_matmul_wgrad %{{.*}}, %{{.*}}, %{{.*}} experts = 8 : tensor<32x64xf32>, tensor<32x64xf32>, tensor<8xi32>
  %dw = weft.grouped_matmul_wgrad %y, %y2, %counts experts = 8 : tensor<32x64xf32>, tensor<32x64xf32>, tensor<8xi32>
  // CHECK: weft.expert_combine %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<16x2xf32>, tensor<16x2xi32>
  %c = weft.expert_combine %y2, %gw, %pos : tensor<32x64xf32>, tensor<16x2xf32>, tensor<16x2xi32>
  return %c, %v, %i : tensor<16x64xf32>, tensor<16x3xf32>, tensor<16x3xi32>
}

// Ops that autodiff introduces.
// CHECK-LABEL: func.func @gradient_ops
func.func @gradient_ops(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %ids: tensor<2x8xi32>, %q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %l: tensor<2x8x256xf32>, %s: tensor<f32>) {
  // CHECK: weft.ge %{{.*}}, %{{.*}} : tensor<2x8x64xf32>
  %0 = weft.ge %x, %x : tensor<2x8x64xf32>
  // CHECK: weft.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x64xf32>
  %sel = weft.select %0, %x, %x : tensor<2x8x64xf32>
  // CHECK: weft.gelu_grad %{{.*}}, %{{.*}} : tensor<2x8x64xf32>
  %1 = weft.gelu_grad %x, %x : tensor<2x8x64xf32>
  // CHECK: weft.silu_grad %{{.*}}, %{{.*}} : tensor<2x8x64xf32>
  %2 = weft.silu_grad %x, %x : tensor<2x8x64xf32>
  // CHECK: weft.embedding_grad %{{.*}}, %{{.*}} : tensor<2x8xi32>, tensor<2x8x64xf32> -> tensor<256x64xf32>
  %3 = weft.embedding_grad %ids, %x : tensor<2x8xi32>, tensor<2x8x64xf32> -> tensor<256x64xf32>
  // CHECK: weft.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x64xf32>, tensor<64xf32>
  %4:3 = weft.layer_norm_grad %x, %g, %x : tensor<2x8x64xf32>, tensor<64xf32>
  // CHECK: weft.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<2x8x64xf32>, tensor<64xf32>
  %5:2 = weft.rms_norm_grad %x, %g, %x {epsilon = 1.0e-5 : f64} : tensor<2x8x64xf32>, tensor<64xf32>
  // CHECK: weft.rope %{{.*}} inverse : tensor<2x8x4x16xf32>
  %6 = weft.rope %q inverse : tensor<2x8x4x16xf32>
  %o:2 = weft.attention %q, %kv, %kv scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
  // CHECK: weft.attention_entropy %{{.*}}, %{{.*}}, %lse scale = 2.500000e-01 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
  %h = weft.attention_entropy %q, %kv, %o#1 scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
  // CHECK: weft.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  %7:3 = weft.attention_grad %q, %kv, %kv, %o#0, %o#1, %o#0 scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  // CHECK: weft.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x256xf32>, tensor<2x8xi32>
  %8 = weft.cross_entropy_grad %l, %ids, %s : tensor<2x8x256xf32>, tensor<2x8xi32>
  return
}

// CHECK-LABEL: func.func @expert_gather_scatter
func.func @expert_gather_scatter(%eo: tensor<32x64xf32>, %p: tensor<16x2xi32>) -> tensor<32x64xf32> {
  // CHECK: weft.expert_gather %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<16x2xi32>
  %0 = weft.expert_gather %eo, %p : tensor<32x64xf32>, tensor<16x2xi32>
  // CHECK: weft.expert_scatter %{{.*}}, %{{.*}} rows = 32 : tensor<16x2x64xf32>, tensor<16x2xi32>
  %1 = weft.expert_scatter %0, %p rows = 32 : tensor<16x2x64xf32>, tensor<16x2xi32>
  return %1 : tensor<32x64xf32>
}

// CHECK-LABEL: func.func @state_and_assign
func.func @state_and_assign(%x: tensor<4xf32>) {
  // CHECK: weft.param "w.exp_avg" init(zeros) state : tensor<4xf32>
  %m = weft.param "w.exp_avg" init(zeros) state : tensor<4xf32>
  // CHECK: weft.assign "w.exp_avg", %{{.*}} : tensor<4xf32>
  weft.assign "w.exp_avg", %x : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @matmul_epilogues
func.func @matmul_epilogues(%x: tensor<2x8x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %dz: tensor<2x8x64xf32>, %wt: tensor<64x256xbf16>, %xb: tensor<8x64xbf16>, %c: tensor<64xf32>) -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>, tensor<2x8x64xf32>, tensor<8x256xbf16>, tensor<2x8x256xf32>) {
  // CHECK: weft.matmul_epilogue bias %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<2x8x256xf32>
  %0 = weft.matmul_epilogue bias %x, %w bias %b : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<2x8x256xf32>
  // CHECK: weft.matmul_epilogue bias_gelu %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>)
  %1:2 = weft.matmul_epilogue bias_gelu %x, %w bias %b : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>)
  // CHECK: weft.matmul_epilogue gelu %{{.*}}, %{{.*}} : (tensor<8x64xbf16>, tensor<64x256xbf16>) -> (tensor<8x256xbf16>, tensor<8x256xbf16>)
  %2:2 = weft.matmul_epilogue gelu %xb, %wt : (tensor<8x64xbf16>, tensor<64x256xbf16>) -> (tensor<8x256xbf16>, tensor<8x256xbf16>)
  // CHECK: weft.matmul_epilogue dgelu %{{.*}}, %{{.*}} preactivation %{{.*}} : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<2x8x256xf32>) -> tensor<2x8x256xf32>
  %3 = weft.matmul_epilogue dgelu %dz, %w preactivation %1#1 : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<2x8x256xf32>) -> tensor<2x8x256xf32>
  // CHECK: weft.matmul_epilogue bias %{{.*}}, %{{.*}} transpose_rhs bias %{{.*}} : (tensor<2x8x256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %4 = weft.matmul_epilogue bias %3, %w transpose_rhs bias %c : (tensor<2x8x256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %0, %1#0, %4, %2#0, %3 : tensor<2x8x256xf32>, tensor<2x8x256xf32>, tensor<2x8x64xf32>, tensor<8x256xbf16>, tensor<2x8x256xf32>
}

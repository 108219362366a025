// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s
// RUN: weft-opt %s --mlir-print-op-generic | weft-opt | FileCheck %s

// Every sched op parses, verifies and prints back in its declarative form:
// one rank's module of a tensor-parallel block, written by hand the way the
// lowering will emit it.

// CHECK: sched.mesh @mesh axes ["dp", "tp", "pp"] sizes [2, 2, 2]
sched.mesh @mesh axes ["dp", "tp", "pp"] sizes [2, 2, 2]
// CHECK: sched.param @wte init(normal, 2.000000e-02) {split = {{\[}}["tp"], []]} : !sched.buffer<32x16xf32>
sched.param @wte init(normal, 2.0e-02) {split = [["tp"], []]} : !sched.buffer<32x16xf32>
// CHECK: sched.param @m init(zeros) state : !sched.buffer<32x16xf32>
sched.param @m init(zeros) state : !sched.buffer<32x16xf32>
sched.param @w init(uniform, 1.0e-01) : !sched.buffer<16x16xbf16>
sched.param @ln init(ones) : !sched.buffer<16xf32>
// CHECK: sched.constant @half dense<5.000000e-01> : tensor<1xf32>
sched.constant @half dense<0.5> : tensor<1xf32>
// CHECK: sched.kernel @fused_0 inputs [!sched.buffer<8x16xf32>] outputs [!sched.buffer<8x16xbf16>] scalars [i64, f32]
sched.kernel @fused_0 inputs [!sched.buffer<8x16xf32>] outputs [!sched.buffer<8x16xbf16>] scalars [i64, f32]

// CHECK-LABEL: sched.program @step arena(8192) align(64) events(2) streams ["compute", "comm"]
sched.program @step arena(8192) align(64) events(2) streams ["compute", "comm"] {
^bb0(%ids: !sched.buffer<8xi32>, %labels: !sched.buffer<8xi32>):
  // CHECK: sched.get @wte : <32x16xf32>
  %wte = sched.get @wte : !sched.buffer<32x16xf32>
  %w = sched.get @w : !sched.buffer<16x16xbf16>
  %ln = sched.get @ln : !sched.buffer<16xf32>
  %half = sched.get @half : !sched.buffer<1xf32>
  // CHECK: sched.alloc offset(0) live(0, 2) : <8x16xf32>
  %x = sched.alloc offset(0) live(0, 2) : !sched.buffer<8x16xf32>
  %xb = sched.alloc offset(512) live(1, 3) : !sched.buffer<8x16xbf16>
  %y = sched.alloc offset(768) live(2, 4) : !sched.buffer<8x16xbf16>
  // CHECK: sched.view %{{.*}}[0] : <8x16xbf16> to <128xbf16>
  %yflat = sched.view %y[0] : !sched.buffer<8x16xbf16> to !sched.buffer<128xbf16>
  %loss = sched.alloc offset(1024) live(4, 15) : !sched.buffer<1xf32>
  %g = sched.alloc offset(1088) live(5, 15) : !sched.buffer<32x16xf32>
  %logits = sched.alloc offset(4096) live(3, 6) : !sched.buffer<8x16xf32>
  %dropped = sched.alloc offset(6144) live(14, 15) : !sched.buffer<32x16xf32>
  // CHECK: sched.embedding %{{.*}}, %{{.*}}, %{{.*}} {vocab_axes = ["tp"]} : !sched.buffer<32x16xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  sched.embedding %wte, %ids, %x {vocab_axes = ["tp"]} : !sched.buffer<32x16xf32>, !sched.buffer<8xi32>, !sched.buffer<8x16xf32>
  // CHECK: sched.launch @fused_0 grid [1, 1, 1] block 256 ins(%{{.*}} : !sched.buffer<8x16xf32>) outs(%{{.*}} : !sched.buffer<8x16xbf16>) scalars [128, 1.000000e+00 : f32]
  sched.launch @fused_0 grid [1, 1, 1] block 256 ins(%x : !sched.buffer<8x16xf32>) outs(%xb : !sched.buffer<8x16xbf16>) scalars [128, 1.0 : f32]
  // CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} mnk [8, 16, 16] batch 1 ld [16, 16, 16] strides [0, 0, 0] epilogue none transpose_b :
  sched.gemm %xb, %w -> %y mnk [8, 16, 16] batch 1 ld [16, 16, 16] strides [0, 0, 0] epilogue none transpose_b : !sched.buffer<8x16xbf16>, !sched.buffer<16x16xbf16> -> !sched.buffer<8x16xbf16>
  // CHECK: sched.copy %{{.*}} -> %{{.*}} sizes [8, 16] src [0, 16, 1] dst [0, 16, 1] :
  sched.copy %y -> %logits sizes [8, 16] src [0, 16, 1] dst [0, 16, 1] : !sched.buffer<8x16xbf16> -> !sched.buffer<8x16xf32>
  // CHECK: sched.cross_entropy %{{.*}} {ignore_index = -100 : i64, vocab_axes = []}
  sched.cross_entropy %logits, %labels, %loss {ignore_index = -100, vocab_axes = []} : !sched.buffer<8x16xf32>, !sched.buffer<8xi32>, !sched.buffer<1xf32>
  // CHECK: sched.fill %{{.*}} value 0.000000e+00 : <32x16xf32>
  sched.fill %g value 0.0 : !sched.buffer<32x16xf32>
  // CHECK: sched.embedding_grad
  sched.embedding_grad %ids, %logits, %g {vocab_axes = ["tp"]} : !sched.buffer<8xi32>, !sched.buffer<8x16xf32>, !sched.buffer<32x16xf32>
  // CHECK: sched.record 0{{$}}
  sched.record 0 on "compute"
  // CHECK: sched.wait 0 on "comm"
  sched.wait 0 on "comm"
  // CHECK: sched.collective all_reduce sum %{{.*}} -> %{{.*}} over @mesh ["dp"] on "comm" : <32x16xf32> -> <32x16xf32>
  sched.collective all_reduce sum %g -> %g over @mesh ["dp"] on "comm" : !sched.buffer<32x16xf32> -> !sched.buffer<32x16xf32>
  // CHECK: sched.send %{{.*}} to @mesh "pp" offset 1 tag 0 on "comm" : <1xf32>
  sched.send %loss to @mesh "pp" offset 1 tag 0 on "comm" : !sched.buffer<1xf32>
  // CHECK: sched.recv %{{.*}} from @mesh "pp" offset -1 tag 1 on "comm" : <1xf32>
  sched.recv %loss from @mesh "pp" offset -1 tag 1 on "comm" : !sched.buffer<1xf32>
  sched.record 1 on "comm"
  sched.wait 1
  // A block of a split, micro-batched tensor's mask.
  // CHECK: sched.dropout %{{.*}}, %{{.*}} step %{{.*}} : !sched.buffer<1xf32> microbatch %{{.*}} : !sched.buffer<1xf32> {microbatches = 4 : i64, rate = 1.000000e-01 : f64, seed = 7 : i64, split = {{\[}}["dp"], ["tp"]]} : <32x16xf32>, <32x16xf32>
  sched.dropout %g, %dropped step %loss : !sched.buffer<1xf32> microbatch %loss : !sched.buffer<1xf32> {microbatches = 4, rate = 0.1, seed = 7, split = [["dp"], ["tp"]]} : !sched.buffer<32x16xf32>, !sched.buffer<32x16xf32>
  // CHECK: sched.assign @wte = %{{.*}} : <32x16xf32>
  sched.assign @wte = %dropped : !sched.buffer<32x16xf32>
  // CHECK: sched.return ["loss", "grad:wte"] %{{.*}}, %{{.*}} : !sched.buffer<1xf32>, !sched.buffer<32x16xf32>
  sched.return ["loss", "grad:wte"] %loss, %g : !sched.buffer<1xf32>, !sched.buffer<32x16xf32>
}

// The rest of the instruction set, one of each.
sched.kernel @iota inputs [] outputs [!sched.buffer<4x8xf32>] scalars []
// CHECK-LABEL: sched.program @ops
sched.program @ops arena(65536) align(256) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<2x4x4x8xf32>, %k: !sched.buffer<2x4x2x8xf32>, %v: !sched.buffer<2x4x2x8xf32>,
     %x: !sched.buffer<4x8xf32>, %w8: !sched.buffer<8x8xf8E4M3FN>, %a8: !sched.buffer<4x8xf8E4M3FN>,
     %ids: !sched.buffer<4x2xi64>, %t: !sched.buffer<f32>):
  %o = sched.alloc offset(0) live(0, 1) : !sched.buffer<2x4x4x8xf32>
  %lse = sched.alloc offset(1024) live(0, 1) : !sched.buffer<2x4x4xf32>
  %s = sched.alloc offset(2048) live(0, 1) : !sched.buffer<1024xf32>
  %e = sched.alloc offset(1536) live(0, 1) : !sched.buffer<2x4x4xf32>
  %dq = sched.alloc offset(8192) live(1, 1) : !sched.buffer<2x4x4x8xf32>
  %dk = sched.alloc offset(9216) live(1, 1) : !sched.buffer<2x4x2x8xf32>
  %dv = sched.alloc offset(9728) live(1, 1) : !sched.buffer<2x4x2x8xf32>
  // With each row's entropy (the health probe) from the same pass.
  // CHECK: sched.attention {{.*}} entropy(%{{.*}} : !sched.buffer<2x4x4xf32>) scratch(%{{.*}} : !sched.buffer<1024xf32>) scale 3.535500e-01 causal algorithm gemm_softmax :
  sched.attention %q, %k, %v -> %o, %lse entropy(%e : !sched.buffer<2x4x4xf32>) scratch(%s : !sched.buffer<1024xf32>) scale 0.35355 causal algorithm gemm_softmax : !sched.buffer<2x4x4x8xf32>, !sched.buffer<2x4x2x8xf32>, !sched.buffer<2x4x2x8xf32> -> !sched.buffer<2x4x4x8xf32>, !sched.buffer<2x4x4xf32>
  // With dropout of the probabilities: its counters, rate, seed and block.
  // CHECK: sched.attention_grad {{.*}} step(%{{.*}} : !sched.buffer<f32>) microbatch(%{{.*}} : !sched.buffer<f32>) scale 3.535500e-01 causal algorithm flash {dropout = 1.000000e-01 : f64, microbatches = 2 : i64, seed = 5 : i64, split = {{\[}}["dp"], [], ["tp"], []]} :
  sched.attention_grad %q, %k, %v, %o, %lse, %o -> %dq, %dk, %dv step(%t : !sched.buffer<f32>) microbatch(%t : !sched.buffer<f32>) scale 0.35355 causal algorithm flash {dropout = 0.1, microbatches = 2, seed = 5, split = [["dp"], [], ["tp"], []]} : !sched.buffer<2x4x4x8xf32>, !sched.buffer<2x4x2x8xf32>, !sched.buffer<2x4x2x8xf32>, !sched.buffer<2x4x4x8xf32>, !sched.buffer<2x4x4xf32>, !sched.buffer<2x4x4x8xf32> -> !sched.buffer<2x4x4x8xf32>, !sched.buffer<2x4x2x8xf32>, !sched.buffer<2x4x2x8xf32>
  %ids0 = sched.view %ids[0] : !sched.buffer<4x2xi64> to !sched.buffer<4xi64>
  %y = sched.alloc offset(12288) live(2, 20) : !sched.buffer<4x8xf32>
  %b = sched.alloc offset(12544) live(2, 20) : !sched.buffer<8xf32>
  %aux = sched.alloc offset(12800) live(2, 20) : !sched.buffer<4x8xf32>
  %sc = sched.alloc offset(13056) live(2, 20) : !sched.buffer<1xf32>
  %scr = sched.alloc offset(16384) live(2, 20) : !sched.buffer<128xf32>
  // CHECK: sched.gemm {{.*}} bias(%{{.*}} : !sched.buffer<8xf32>) aux(%{{.*}} : !sched.buffer<4x8xf32>) scales(%{{.*}}, %{{.*}} : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [4, 8, 8] {{.*}} epilogue bias_gelu accumulate
  sched.gemm %a8, %w8 -> %y bias(%b : !sched.buffer<8xf32>) aux(%aux : !sched.buffer<4x8xf32>) scales(%sc, %sc : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [4, 8, 8] batch 1 ld [8, 8, 8] strides [0, 0, 0] epilogue bias_gelu accumulate : !sched.buffer<4x8xf8E4M3FN>, !sched.buffer<8x8xf8E4M3FN> -> !sched.buffer<4x8xf32>
  // CHECK: sched.launch @iota grid [1, 1, 1] block 32 outs(
  sched.launch @iota grid [1, 1, 1] block 32 outs(%y : !sched.buffer<4x8xf32>) scalars []
  // CHECK: sched.rope
  sched.rope %x, %y {theta = 10000.0, position_offset = 0, inverse = false} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  // Library kernels that are several kernels on a GPU take a scratch.
  // CHECK: sched.reduce sum %{{.*}} -> %{{.*}} scratch(%{{.*}} : !sched.buffer<128xf32>) dims [0] : <4x8xf32> -> <8xf32>
  sched.reduce sum %x -> %b scratch(%scr : !sched.buffer<128xf32>) dims [0] : !sched.buffer<4x8xf32> -> !sched.buffer<8xf32>
  sched.softmax %x, %y {dim = 1} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
  // CHECK: sched.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scratch(%{{.*}} : !sched.buffer<128xf32>) {ignore_index = -100 : i64, vocab_axes = []} : !sched.buffer<4x8xf32>, !sched.buffer<4xi64>, !sched.buffer<1xf32>, !sched.buffer<4x8xf32>
  sched.cross_entropy_grad %y, %ids0, %sc, %aux scratch(%scr : !sched.buffer<128xf32>) {ignore_index = -100, vocab_axes = []} : !sched.buffer<4x8xf32>, !sched.buffer<4xi64>, !sched.buffer<1xf32>, !sched.buffer<4x8xf32>
  %dw = sched.alloc offset(15616) live(2, 20) : !sched.buffer<8xf32>
  %db = sched.alloc offset(15872) live(2, 20) : !sched.buffer<8xf32>
  // CHECK: sched.layer_norm_grad {{.*}} scratch(%{{.*}} : !sched.buffer<128xf32>) {epsilon = 1.000000e-05 : f64}
  sched.layer_norm_grad %x, %b, %y, %aux, %dw, %db scratch(%scr : !sched.buffer<128xf32>) {epsilon = 1.0e-5} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<8xf32>
  // CHECK: sched.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64}
  sched.rms_norm_grad %x, %b, %y, %aux, %dw {epsilon = 1.0e-6} : !sched.buffer<4x8xf32>, !sched.buffer<8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>, !sched.buffer<8xf32>
  sched.one_hot %ids0, %y : !sched.buffer<4xi64>, !sched.buffer<4x8xf32>
  %tv = sched.alloc offset(13312) live(2, 20) : !sched.buffer<4x2xf32>
  sched.topk %x, %tv, %ids {k = 2} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  sched.topk_gating %x, %tv, %ids {k = 2, normalize = true} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi64>
  %rows = sched.alloc offset(20480) live(2, 20) : !sched.buffer<8x8xf32>
  %pairs = sched.alloc offset(20736) live(2, 20) : !sched.buffer<4x2x8xf32>
  %pos = sched.alloc offset(21248) live(2, 20) : !sched.buffer<4x2xi32>
  %counts = sched.alloc offset(21504) live(2, 20) : !sched.buffer<8xi32>
  %w = sched.alloc offset(21760) live(2, 20) : !sched.buffer<8x8x8xf32>
  %h = sched.alloc offset(24064) live(2, 20) : !sched.buffer<8x8xf32>
  // CHECK: sched.expert_route %{{.*}}, %{{.*}}, %{{.*}} {capacity = 0 : i64, token_axes = []} : !sched.buffer<4x2xi64>, !sched.buffer<4x2xi32>, !sched.buffer<8xi32>
  sched.expert_route %ids, %pos, %counts {capacity = 0, token_axes = []} : !sched.buffer<4x2xi64>, !sched.buffer<4x2xi32>, !sched.buffer<8xi32>
  // CHECK: sched.expert_dispatch %{{.*}}, %{{.*}}, %{{.*}} : !sched.buffer<4x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8x8xf32>
  sched.expert_dispatch %x, %pos, %rows : !sched.buffer<4x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8x8xf32>
  // CHECK: sched.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs = true}
  sched.grouped_matmul %rows, %w, %counts, %h {transpose_rhs = true} : !sched.buffer<8x8xf32>, !sched.buffer<8x8x8xf32>, !sched.buffer<8xi32>, !sched.buffer<8x8xf32>
  // CHECK: sched.grouped_matmul_wgrad
  sched.grouped_matmul_wgrad %h, %rows, %counts, %w : !sched.buffer<8x8xf32>, !sched.buffer<8x8xf32>, !sched.buffer<8xi32>, !sched.buffer<8x8x8xf32>
  sched.expert_combine %h, %tv, %pos, %y : !sched.buffer<8x8xf32>, !sched.buffer<4x2xf32>, !sched.buffer<4x2xi32>, !sched.buffer<4x8xf32>
  // CHECK: sched.expert_gather
  sched.expert_gather %h, %pos, %pairs : !sched.buffer<8x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<4x2x8xf32>
  // CHECK: sched.expert_scatter
  sched.expert_scatter %pairs, %pos, %rows : !sched.buffer<4x2x8xf32>, !sched.buffer<4x2xi32>, !sched.buffer<8x8xf32>
  sched.return []
}

// CHECK-LABEL: sched.schedule @train microbatches(2)
sched.schedule @train microbatches(2) {
  // CHECK: sched.sequence where "pp" = 0
  sched.sequence where "pp" = 0 {
    // CHECK: sched.run @step microbatch(0)
    sched.run @step microbatch(0)
    // CHECK: sched.run @step microbatch(1) chunk(1)
    sched.run @step microbatch(1) chunk(1)
  }
  sched.sequence where "pp" = 1 {
    sched.run @ops microbatch(1)
  }
}
// CHECK-LABEL: sched.schedule @eval microbatches(1)
sched.schedule @eval microbatches(1) {
  sched.sequence {
    sched.run @step microbatch(0)
  }
}

// FP8 block maxima, then the quantization that reads them.
// CHECK-LABEL: sched.program @fp8
sched.program @fp8 arena(160) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>):
  %a = sched.alloc offset(0) live(0, 1) : !sched.buffer<4x1xf32>
  %y = sched.alloc offset(32) live(1, 2) : !sched.buffer<4x8xf32>
  // CHECK: sched.fp8_amax %{{.*}}, %{{.*}} : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>
  sched.fp8_amax %x, %a : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>
  // CHECK: sched.fp8_quantize %{{.*}}, %{{.*}}, %{{.*}} {format = "f8e4m3fn", pow2_scales}
  sched.fp8_quantize %x, %a, %y {format = "f8e4m3fn", pow2_scales} : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf32>
  sched.return ["y"] %y : !sched.buffer<4x8xf32>
}

// A quantized tensor moved as codes: encoded by its blocks' maxima, then
// decoded by them (after a gather, in a program).
// CHECK-LABEL: sched.program @fp8_codes
sched.program @fp8_codes arena(160) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<4x8xf32>, %a: !sched.buffer<4x1xf32>):
  %q = sched.alloc offset(0) live(0, 1) : !sched.buffer<4x8xf8E5M2>
  %y = sched.alloc offset(32) live(1, 2) : !sched.buffer<4x8xf32>
  // CHECK: sched.fp8_encode %{{.*}}, %{{.*}}, %{{.*}} {pow2_scales} : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf8E5M2>
  sched.fp8_encode %x, %a, %q {pow2_scales} : !sched.buffer<4x8xf32>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf8E5M2>
  // CHECK: sched.fp8_decode %{{.*}}, %{{.*}}, %{{.*}} {pow2_scales} : !sched.buffer<4x8xf8E5M2>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf32>
  sched.fp8_decode %q, %a, %y {pow2_scales} : !sched.buffer<4x8xf8E5M2>, !sched.buffer<4x1xf32>, !sched.buffer<4x8xf32>
  sched.return ["y"] %y : !sched.buffer<4x8xf32>
}

// Codes held as they are (a state an encode filled) get their GEMM's
// scales from their maxima alone: one f32, or 128 x 128 blocks.
// CHECK-LABEL: sched.program @fp8_held_codes
sched.program @fp8_held_codes arena(256) align(16) events(0) streams ["compute"] {
^bb0(%q: !sched.buffer<32x64xf8E4M3FN>, %a: !sched.buffer<1x1xf32>, %w: !sched.buffer<256x640xf8E5M2>, %b: !sched.buffer<2x5xf32>):
  %s = sched.alloc offset(0) live(0, 2) : !sched.buffer<1xf32>
  %t = sched.alloc offset(16) live(1, 2) : !sched.buffer<16xf32>
  // CHECK: sched.fp8_scale_inv %{{.*}}, %{{.*}}, %{{.*}} : !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<1x1xf32>, !sched.buffer<1xf32>
  sched.fp8_scale_inv %q, %a, %s : !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<1x1xf32>, !sched.buffer<1xf32>
  // CHECK: sched.fp8_scale_inv %{{.*}} {pow2_scales, scale_mode = "blk128"} : !sched.buffer<256x640xf8E5M2>, !sched.buffer<2x5xf32>, !sched.buffer<16xf32>
  sched.fp8_scale_inv %w, %b, %t {scale_mode = "blk128", pow2_scales} : !sched.buffer<256x640xf8E5M2>, !sched.buffer<2x5xf32>, !sched.buffer<16xf32>
  sched.return ["s", "t"] %s, %t : !sched.buffer<1xf32>, !sched.buffer<16xf32>
}

// FP8 codes for a GEMM: as stored and transposed, each with 1/s, and the
// GEMM reading them with their scales.
// Block scales: 1 x 128 tiles of x [16, 256] (outer-dim-major, 2 x 16
// scales) by 128 x 128 blocks of w read as B [128, 256] (one row of 2
// scales, padded to 4); row-wise x by row-wise w (outer vectors).
// CHECK-LABEL: sched.program @fp8_block_gemm
sched.program @fp8_block_gemm arena(45776) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x256xbf16>, %ax: !sched.buffer<16x2xf32>, %w: !sched.buffer<256x128xf32>, %aw: !sched.buffer<2x1xf32>, %rx: !sched.buffer<16x1xf32>, %rw: !sched.buffer<1x128xf32>):
  %qx = sched.alloc offset(0) live(0, 5) : !sched.buffer<16x256xf8E4M3FN>
  %sx = sched.alloc offset(4096) live(0, 2) : !sched.buffer<32xf32>
  %qw = sched.alloc offset(4224) live(1, 5) : !sched.buffer<128x256xf8E4M3FN>
  %sw = sched.alloc offset(36992) live(1, 2) : !sched.buffer<4xf32>
  %y = sched.alloc offset(37008) live(2, 6) : !sched.buffer<16x128xf32>
  // CHECK: sched.fp8_cast %{{.*}} {scale_mode = "vec128"} : !sched.buffer<16x256xbf16>, !sched.buffer<16x2xf32>
  sched.fp8_cast %x, %ax, %qx, %sx {scale_mode = "vec128"} : !sched.buffer<16x256xbf16>, !sched.buffer<16x2xf32>, !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<32xf32>
  // CHECK: sched.fp8_cast %{{.*}} {scale_mode = "blk128", transpose}
  sched.fp8_cast %w, %aw, %qw, %sw {transpose, scale_mode = "blk128"} : !sched.buffer<256x128xf32>, !sched.buffer<2x1xf32>, !sched.buffer<128x256xf8E4M3FN>, !sched.buffer<4xf32>
  // CHECK: sched.gemm {{.*}} transpose_b {scale_modes = ["vec128", "blk128"]}
  sched.gemm %qx, %qw -> %y scales(%sx, %sw : !sched.buffer<32xf32>, !sched.buffer<4xf32>) mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["vec128", "blk128"]} : <16x256xf8E4M3FN>, <128x256xf8E4M3FN> -> <16x128xf32>
  %rsx = sched.alloc offset(45200) live(3, 5) : !sched.buffer<16xf32>
  %rsw = sched.alloc offset(45264) live(4, 5) : !sched.buffer<128xf32>
  // CHECK: sched.fp8_cast %{{.*}} {scale_mode = "rows"}
  sched.fp8_cast %x, %rx, %qx, %rsx {scale_mode = "rows"} : !sched.buffer<16x256xbf16>, !sched.buffer<16x1xf32>, !sched.buffer<16x256xf8E4M3FN>, !sched.buffer<16xf32>
  sched.fp8_cast %w, %rw, %qw, %rsw {transpose, scale_mode = "rows"} : !sched.buffer<256x128xf32>, !sched.buffer<1x128xf32>, !sched.buffer<128x256xf8E4M3FN>, !sched.buffer<128xf32>
  // CHECK: sched.gemm {{.*}} {scale_modes = ["rows", "rows"]}
  sched.gemm %qx, %qw -> %y scales(%rsx, %rsw : !sched.buffer<16xf32>, !sched.buffer<128xf32>) mnk [16, 128, 256] batch 1 ld [256, 256, 128] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["rows", "rows"]} : <16x256xf8E4M3FN>, <128x256xf8E4M3FN> -> <16x128xf32>
  sched.return ["y"] %y : !sched.buffer<16x128xf32>
}

// MXFP8: 1 x 32 blocks of x [16, 64] and of w read as B [32, 64], with
// power-of-two scales, [2][16] and [2][32] ("vec32", Weft's own kernel).
// CHECK-LABEL: sched.program @fp8_vec32_gemm
sched.program @fp8_vec32_gemm arena(5504) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x64xf32>, %ax: !sched.buffer<16x2xf32>, %w: !sched.buffer<64x32xf32>, %aw: !sched.buffer<2x32xf32>):
  %qx = sched.alloc offset(0) live(0, 2) : !sched.buffer<16x64xf8E4M3FN>
  %sx = sched.alloc offset(1024) live(0, 2) : !sched.buffer<32xf32>
  %qw = sched.alloc offset(1152) live(1, 2) : !sched.buffer<32x64xf8E4M3FN>
  %sw = sched.alloc offset(3200) live(1, 2) : !sched.buffer<64xf32>
  %y = sched.alloc offset(3456) live(2, 3) : !sched.buffer<16x32xf32>
  // CHECK: sched.fp8_cast %{{.*}} {pow2_scales, scale_mode = "vec32"} : !sched.buffer<16x64xf32>
  sched.fp8_cast %x, %ax, %qx, %sx {pow2_scales, scale_mode = "vec32"} : !sched.buffer<16x64xf32>, !sched.buffer<16x2xf32>, !sched.buffer<16x64xf8E4M3FN>, !sched.buffer<32xf32>
  // CHECK: sched.fp8_cast %{{.*}} {pow2_scales, scale_mode = "vec32", transpose} : !sched.buffer<64x32xf32>
  sched.fp8_cast %w, %aw, %qw, %sw {transpose, pow2_scales, scale_mode = "vec32"} : !sched.buffer<64x32xf32>, !sched.buffer<2x32xf32>, !sched.buffer<32x64xf8E4M3FN>, !sched.buffer<64xf32>
  // CHECK: sched.gemm {{.*}} transpose_b {scale_modes = ["vec32", "vec32"]}
  sched.gemm %qx, %qw -> %y scales(%sx, %sw : !sched.buffer<32xf32>, !sched.buffer<64xf32>) mnk [16, 32, 64] batch 1 ld [64, 64, 32] strides [0, 0, 0] epilogue none transpose_b {scale_modes = ["vec32", "vec32"]} : <16x64xf8E4M3FN>, <32x64xf8E4M3FN> -> <16x32xf32>
  sched.return ["y"] %y : !sched.buffer<16x32xf32>
}

// An expert layer's FP8 GEMMs: rows of x [64, 64] in groups by two experts'
// weights [2, 32, 64] (vec32), and the input gradient's weight [2, 64, 32]
// cast with each expert's matrix transposed on its own ([2, 32, 64],
// rows).
// CHECK-LABEL: sched.program @fp8_grouped_matmul
sched.program @fp8_grouped_matmul arena(24576) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x64xf32>, %ax: !sched.buffer<64x2xf32>, %w: !sched.buffer<2x32x64xf32>, %aw: !sched.buffer<2x32x2xf32>, %counts: !sched.buffer<2xi32>, %v: !sched.buffer<2x64x32xf32>, %av: !sched.buffer<2x1x32xf32>, %dy: !sched.buffer<64x64xf8E4M3FN>, %sdy: !sched.buffer<64xf32>):
  %qx = sched.alloc offset(0) live(0, 2) : !sched.buffer<64x64xf8E4M3FN>
  %sx = sched.alloc offset(4096) live(0, 2) : !sched.buffer<128xf32>
  %qw = sched.alloc offset(4608) live(1, 2) : !sched.buffer<2x32x64xf8E4M3FN>
  %sw = sched.alloc offset(8704) live(1, 2) : !sched.buffer<128xf32>
  %y = sched.alloc offset(9216) live(2, 5) : !sched.buffer<64x32xf32>
  %qv = sched.alloc offset(17408) live(3, 4) : !sched.buffer<2x32x64xf8E4M3FN>
  %sv = sched.alloc offset(21504) live(3, 4) : !sched.buffer<64xf32>
  %dx = sched.alloc offset(0) live(4, 5) : !sched.buffer<64x32xf32>
  sched.fp8_cast %x, %ax, %qx, %sx {pow2_scales, scale_mode = "vec32"} : !sched.buffer<64x64xf32>, !sched.buffer<64x2xf32>, !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<128xf32>
  sched.fp8_cast %w, %aw, %qw, %sw {pow2_scales, scale_mode = "vec32"} : !sched.buffer<2x32x64xf32>, !sched.buffer<2x32x2xf32>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<128xf32>
  // CHECK: sched.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}} : !sched.buffer<128xf32>, !sched.buffer<128xf32>) {scale_modes = ["vec32", "vec32"], transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.grouped_matmul %qx, %qw, %counts, %y scales(%sx, %sw : !sched.buffer<128xf32>, !sched.buffer<128xf32>) {scale_modes = ["vec32", "vec32"], transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  // CHECK: sched.fp8_cast %{{.*}} {scale_mode = "rows", transpose} : !sched.buffer<2x64x32xf32>, !sched.buffer<2x1x32xf32>, !sched.buffer<2x32x64xf8E4M3FN>
  sched.fp8_cast %v, %av, %qv, %sv {transpose, scale_mode = "rows"} : !sched.buffer<2x64x32xf32>, !sched.buffer<2x1x32xf32>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<64xf32>
  // CHECK: sched.grouped_matmul {{.*}} {scale_modes = ["rows", "rows"], transpose_rhs = true}
  sched.grouped_matmul %dy, %qv, %counts, %dx scales(%sdy, %sv : !sched.buffer<64xf32>, !sched.buffer<64xf32>) {scale_modes = ["rows", "rows"], transpose_rhs = true} : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<2x32x64xf8E4M3FN>, !sched.buffer<2xi32>, !sched.buffer<64x32xf32>
  sched.return ["y", "dx"] %y, %dx : !sched.buffer<64x32xf32>, !sched.buffer<64x32xf32>
}

// CHECK-LABEL: sched.program @fp8_gemm
sched.program @fp8_gemm arena(2304) align(16) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16x32xf32>, %w: !sched.buffer<16x32xf32>, %a: !sched.buffer<1xf32>):
  %qx = sched.alloc offset(0) live(0, 2) : !sched.buffer<16x32xf8E4M3FN>
  %sx = sched.alloc offset(512) live(0, 2) : !sched.buffer<1xf32>
  %qw = sched.alloc offset(576) live(1, 2) : !sched.buffer<32x16xf8E5M2>
  %sw = sched.alloc offset(1088) live(1, 2) : !sched.buffer<1xf32>
  %y = sched.alloc offset(1152) live(2, 3) : !sched.buffer<16x16xf32>
  // CHECK: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !sched.buffer<16x32xf32>, !sched.buffer<1xf32>, !sched.buffer<16x32xf8E4M3FN>, !sched.buffer<1xf32>
  sched.fp8_cast %x, %a, %qx, %sx : !sched.buffer<16x32xf32>, !sched.buffer<1xf32>, !sched.buffer<16x32xf8E4M3FN>, !sched.buffer<1xf32>
  // CHECK: sched.fp8_cast %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose} : !sched.buffer<16x32xf32>, !sched.buffer<1xf32>, !sched.buffer<32x16xf8E5M2>, !sched.buffer<1xf32>
  sched.fp8_cast %w, %a, %qw, %sw {transpose} : !sched.buffer<16x32xf32>, !sched.buffer<1xf32>, !sched.buffer<32x16xf8E5M2>, !sched.buffer<1xf32>
  // CHECK: sched.gemm %{{.*}}, %{{.*}} -> %{{.*}} scales(%{{.*}}, %{{.*}} : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [16, 16, 32]
  sched.gemm %qx, %qw -> %y scales(%sx, %sw : !sched.buffer<1xf32>, !sched.buffer<1xf32>) mnk [16, 16, 32] batch 1 ld [32, 16, 16] strides [0, 0, 0] epilogue none : <16x32xf8E4M3FN>, <32x16xf8E5M2> -> <16x16xf32>
  sched.return ["y"] %y : !sched.buffer<16x16xf32>
}

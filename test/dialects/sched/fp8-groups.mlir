// RUN: weft-opt %s | FileCheck %s

// An expert layer's FP8 weight gradient: the rows quantized in tiles of each
// expert's rows (values, or codes transposed and expert-major with a scale
// per tile and column), and the grouped weight gradient on the codes. Four
// groups of two experts in 64 rows: T = ceil(64 / 32) + 2 = 4 tiles of 32
// rows, or 2 (one an expert) for whole experts.
// CHECK-LABEL: sched.program @groups
sched.program @groups arena(0) align(1) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<64x96xf32>, %y: !sched.buffer<64x48xf32>, %s: !sched.buffer<4xi32>, %q: !sched.buffer<64x96xf32>, %cx: !sched.buffer<96x64xf8E4M3FN>, %sx: !sched.buffer<4x96xf32>, %cy: !sched.buffer<48x64xf8E5M2>, %sy: !sched.buffer<4x48xf32>, %w: !sched.buffer<2x96x48xf32>, %cz: !sched.buffer<96x64xf8E4M3FN>, %sz: !sched.buffer<2x96xf32>):
  // CHECK: sched.fp8_group_quantize %{{.*}}, %{{.*}}, %{{.*}} {experts = 2 : i64, format = "f8e4m3fn", pow2_scales, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf32>
  sched.fp8_group_quantize %x, %s, %q {experts = 2 : i64, format = "f8e4m3fn", pow2_scales, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<64x96xf32>
  // CHECK: sched.fp8_group_cast %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<4x96xf32>
  sched.fp8_group_cast %x, %s, %cx, %sx {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<4x96xf32>
  sched.fp8_group_cast %y, %s, %cy, %sy {experts = 2 : i64, tile_rows = 32 : i64} : !sched.buffer<64x48xf32>, !sched.buffer<4xi32>, !sched.buffer<48x64xf8E5M2>, !sched.buffer<4x48xf32>
  // CHECK: sched.grouped_matmul_wgrad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}} : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E5M2>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  sched.grouped_matmul_wgrad %cx, %cy, %s, %w scales(%sx, %sy : !sched.buffer<4x96xf32>, !sched.buffer<4x48xf32>) {tile_rows = 32 : i64} : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<48x64xf8E5M2>, !sched.buffer<4xi32>, !sched.buffer<2x96x48xf32>
  // CHECK: sched.fp8_group_cast {{.*}} {experts = 2 : i64, tile_rows = 0 : i64} : {{.*}}, !sched.buffer<2x96xf32>
  sched.fp8_group_cast %x, %s, %cz, %sz {experts = 2 : i64, tile_rows = 0 : i64} : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>, !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<2x96xf32>
  sched.return []
}

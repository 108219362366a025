// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=CUDA

// A fused group is a launch of its generated kernel, declared once for the
// module with the exact types it is passed; identical groups share it. The
// CPU launcher takes f32 only; the GPU's reads bf16 as stored. Grids: 16384
// elements at four a thread in blocks of 256 is 16 blocks.
// CHECK: sched.kernel @weft_k0 inputs [!sched.buffer<16384xf32>, !sched.buffer<16384xf32>] outputs [!sched.buffer<16384xf32>] scalars [i64]
// CHECK-NOT: sched.kernel
// CHECK-LABEL: sched.program @elementwise
// CHECK: sched.copy %{{.*}} : <16384xbf16> -> <16384xf32>
// CHECK: sched.launch @weft_k0 grid [1, 1, 1] block 1 ins({{.*}}) outs(%[[W:.*]] : !sched.buffer<16384xf32>) scalars [16384]
// CHECK-NEXT: sched.copy %[[W]] -> %{{.*}} : <16384xf32> -> <16384xbf16>
// CHECK: sched.launch @weft_k0 grid [1, 1, 1] block 1
// CUDA: sched.kernel @weft_k0 inputs [!sched.buffer<16384xbf16>, !sched.buffer<16384xbf16>] outputs [!sched.buffer<16384xbf16>] scalars [i64]
// CUDA-LABEL: sched.program @elementwise
// CUDA-NOT: sched.copy
// CUDA: sched.launch @weft_k0 grid [16, 1, 1] block 256 ins({{.*}} : !sched.buffer<16384xbf16>, !sched.buffer<16384xbf16>) outs({{.*}} : !sched.buffer<16384xbf16>) scalars [16384]
func.func @elementwise(%a: tensor<16384xbf16>, %b: tensor<16384xbf16>) -> tensor<16384xbf16> {
  %0 = weft.fused(%a, %b) : (tensor<16384xbf16>, tensor<16384xbf16>) -> tensor<16384xbf16> {
  ^bb0(%x: tensor<16384xbf16>, %y: tensor<16384xbf16>):
    %s = weft.add %x, %y : tensor<16384xbf16>
    weft.yield %s : tensor<16384xbf16>
  }
  %1 = weft.fused(%0, %b) : (tensor<16384xbf16>, tensor<16384xbf16>) -> tensor<16384xbf16> {
  ^bb0(%x: tensor<16384xbf16>, %y: tensor<16384xbf16>):
    %s = weft.add %x, %y : tensor<16384xbf16>
    weft.yield %s : tensor<16384xbf16>
  }
  return %1 : tensor<16384xbf16>
}

// -----

// A group holding a norm runs one block per row on the GPU.
// CUDA-LABEL: sched.program @rows
// CUDA: sched.launch @weft_k0 grid [8, 1, 1] block 256
func.func @rows(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = weft.fused(%x, %w) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>, %g: tensor<64xf32>):
    %n = weft.rms_norm %a, %g : tensor<8x64xf32>, tensor<64xf32>
    weft.yield %n : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}
